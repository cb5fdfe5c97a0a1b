"""The before / after table of a set of runs: per-run aggregates of their rollouts, and for every run
but the baseline the change against it with 95 % bootstrap intervals (paired by example when the
runs share examples). One place computes the numbers; the page, the Markdown / CSV exports, the
share page and `manage.py compare` all render this.

Reads are bounded: at most MAX_RUNS runs, at most MAX_ROLLOUTS small rows per run (a training
run contributes its last step that has rollouts, which is what "after" means for it).
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import BooleanField, Case, Max, Value, When
from django.db.models.fields.json import KeyTransform

from deeprepo_web.accounts.models import Project
from deeprepo_web.analysis import stats
from deeprepo_web.analysis.behaviour import turn_outliers
from deeprepo_web.analysis.cost import Price
from deeprepo_web.compare import pricing
from deeprepo_web.runs.models import Rollout, Run, RunKind

MIN_RUNS, MAX_RUNS = 2, 10
MAX_ROLLOUTS = 20_000
PASS_TOL = 1e-9
_NAME_RE = re.compile(r"^[\w.\-/: ]{1,100}$")


class CompareError(ValueError):
    """A bad selection or option; the message is one line naming what was wrong."""


# ---------------------------------------------------------------- options


@dataclass(frozen=True)
class ZeroSpec:
    """Which per-rollout count the "zero-X rate" looks at: tools (summed) or a metric."""

    kind: str  # "tool" | "metric"
    names: tuple[str, ...]

    @property
    def label(self) -> str:
        if self.kind == "tool" and self.names == ("llm_batch",):
            return "Zero-delegation rate (no llm_batch)"
        joined = " + ".join(self.names)
        return f"Zero-{joined} rate"

    @property
    def query(self) -> str:
        return f"{self.kind}:{'+'.join(self.names)}"


def parse_zero(value: str | None) -> ZeroSpec | None:
    value = (value or "").strip()
    if not value:
        return None
    kind, _, rest = value.partition(":")
    if kind not in ("tool", "metric") or not rest:
        raise CompareError(f"zero: expected tool:NAME or metric:NAME, got {value[:60]!r}")
    names = tuple(n.strip() for n in rest.split("+") if n.strip())
    if not names or any(not _NAME_RE.match(n) for n in names):
        raise CompareError(f"zero: names may hold letters, digits and . - / : _ only, got {rest[:60]!r}")
    if kind == "metric" and len(names) != 1:
        raise CompareError("zero: metric: takes one metric name")
    return ZeroSpec(kind, names)


@dataclass(frozen=True)
class Effect:
    label: str
    a: int  # index into the runs
    b: int


def letters(n: int) -> list[str]:
    return list(string.ascii_uppercase[:n])


def parse_effects(value: str | None, n_runs: int) -> list[Effect]:
    """`A>B:Model size effect;B>C:RL training effect`. Without a value: each step and first -> last."""
    labels = letters(n_runs)
    if not value or not value.strip():
        pairs = [(i, i + 1, "") for i in range(n_runs - 1)]
        if n_runs > 2:
            pairs.append((0, n_runs - 1, "Combined"))
        return [Effect(lbl, a, b) for a, b, lbl in pairs]
    out: list[Effect] = []
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        pair, _, label = part.partition(":")
        src, sep, dst = pair.strip().upper().partition(">")
        if not sep or src not in labels or dst not in labels or src == dst:
            raise CompareError(
                f"effects: {part[:60]!r} is not FROM>TO[:label] with FROM and TO among {', '.join(labels)}"
            )
        out.append(Effect(label.strip()[:100], labels.index(src), labels.index(dst)))
    if len(out) > 20:
        raise CompareError("effects: at most 20 comparisons")
    return out


@dataclass(frozen=True)
class Options:
    baseline: int = 0
    zero: ZeroSpec | None = None
    pass_threshold: float = 1.0
    effects_query: str = ""
    n_resamples: int = 4_000  # percentile ends move < 1% of the CI width beyond this; keeps the page < 1 s
    seed: int = 0


def runs_select(*, project: Project, ids: Sequence[str]) -> list[Run]:
    """Runs of this project by public id (or exact name), in the given order, 2..10, no repeats."""
    ids = [i.strip() for i in ids if i.strip()]
    if len(ids) < MIN_RUNS:
        raise CompareError(f"runs: pick at least {MIN_RUNS} runs to compare")
    if len(ids) > MAX_RUNS:
        raise CompareError(f"runs: at most {MAX_RUNS} runs can be compared at once, got {len(ids)}")
    if len(set(ids)) != len(ids):
        raise CompareError("runs: the same run is listed twice")
    found = {r.public_id: r for r in Run.objects.filter(project=project, public_id__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        for run in Run.objects.filter(project=project, name__in=missing).order_by("-created_at"):
            if run.name in missing and run.name not in found:
                found[run.name] = run
    out = []
    for i in ids:
        if i not in found:
            raise CompareError(f"runs: no run {i[:60]!r} in this project")
        out.append(found[i])
    if len({r.pk for r in out}) != len(out):
        raise CompareError("runs: the same run is listed twice")
    return out


def runs_use_tool(runs: Sequence[Run], tool: str) -> bool:
    return Rollout.objects.filter(run__in=runs, metrics__behaviour__tool_calls__has_key=tool).exists()


# ---------------------------------------------------------------- per-run data


@dataclass
class RunData:
    run: Run
    letter: str
    step: int | None
    ids: list[int]
    example_keys: list[str]
    reward: np.ndarray
    turns: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cost: np.ndarray
    cost_root: np.ndarray
    cost_sub: np.ndarray
    cost_given: int
    unknown_models: list[str]
    error: np.ndarray
    truncated: np.ndarray
    zero: np.ndarray  # 1.0 where the chosen count is 0, 0.0 where not, nan where unknown
    tool_calls: dict[str, float]
    sub_calls: float
    sub_calls_per_batch: float
    repeated_error_max: int
    repeated_error: str
    outlier_ids: list[int]
    capped: bool

    @property
    def n(self) -> int:
        return len(self.ids)


def _arr(values: list[Any]) -> np.ndarray:
    return np.array([math.nan if v is None else float(v) for v in values], dtype=float)


def _rows(run: Run, zero: ZeroSpec | None) -> tuple[int | None, list[dict[str, Any]], bool]:
    qs = Rollout.objects.filter(run=run)
    step: int | None = None
    if run.kind == RunKind.TRAIN:
        step = qs.aggregate(s=Max("step"))["s"]
        if step is not None:
            qs = qs.filter(step=step)
    fields = ["id", "example_id", "reward", "num_turns", "input_tokens", "output_tokens", "cost",
              "is_truncated", "metrics__behaviour", "has_error"]
    # Error text can be megabytes: Postgres answers "is it empty" without sending it.
    qs = qs.annotate(has_error=Case(When(error="", then=Value(False)), default=Value(True),
                                    output_field=BooleanField()))
    if zero is not None and zero.kind == "metric":
        qs = qs.annotate(zero_m=KeyTransform(zero.names[0], "metrics"),
                         zero_c=KeyTransform(zero.names[0], "reward_components"))
        fields += ["zero_m", "zero_c"]
    rows = list(qs.order_by("id").values(*fields)[: MAX_ROLLOUTS + 1])
    capped = len(rows) > MAX_ROLLOUTS
    rows = rows[:MAX_ROLLOUTS]
    return step, rows, capped


def run_data(run: Run, letter: str, *, zero: ZeroSpec | None, prices: dict[str, Price]) -> RunData:
    step, rows, capped = _rows(run, zero)
    behaviours = [r["metrics__behaviour"] if isinstance(r["metrics__behaviour"], dict) else None for r in rows]
    costs = [
        pricing.rollout_cost(
            root_model=run.model, input_tokens=r["input_tokens"], output_tokens=r["output_tokens"],
            cost=r["cost"], behaviour=b, prices=prices,
        )
        for r, b in zip(rows, behaviours, strict=True)
    ]
    unknown = sorted({m for c in costs for m in c.unknown_models})
    zero_vals: list[float] = []
    for r, b in zip(rows, behaviours, strict=True):
        if zero is None:
            zero_vals.append(math.nan)
        elif zero.kind == "tool":
            if b is None:
                zero_vals.append(math.nan)
            else:
                calls = b.get("tool_calls") or {}
                zero_vals.append(1.0 if sum(calls.get(n, 0) for n in zero.names) == 0 else 0.0)
        else:
            v = r.get("zero_m")
            if v is None:
                v = r.get("zero_c")
            if isinstance(v, bool) or not isinstance(v, int | float):
                zero_vals.append(math.nan)
            else:
                zero_vals.append(1.0 if v == 0 else 0.0)
    tools: Counter[str] = Counter()
    sub_total = batches = 0
    rep_max, rep_text = 0, ""
    n_b = 0
    for b in behaviours:
        if b is None:
            continue
        n_b += 1
        tools.update({k: int(v) for k, v in (b.get("tool_calls") or {}).items()})
        sub_total += int(b.get("sub_calls") or 0)
        batches += int(b.get("batches") or 0)
        if int(b.get("repeated_error_max") or 0) > rep_max:
            rep_max = int(b["repeated_error_max"])
            rep_text = str(b.get("repeated_error") or "")
    turns = [r["num_turns"] for r in rows]
    out_idx = turn_outliers(turns) if rows else []
    return RunData(
        run=run,
        letter=letter,
        step=step,
        ids=[r["id"] for r in rows],
        example_keys=[str(r["example_id"]) for r in rows],
        reward=_arr([r["reward"] for r in rows]),
        turns=_arr(turns),
        input_tokens=_arr([r["input_tokens"] for r in rows]),
        output_tokens=_arr([r["output_tokens"] for r in rows]),
        cost=_arr([c.total for c in costs]),
        cost_root=_arr([c.root for c in costs]),
        cost_sub=_arr([c.sub for c in costs]),
        cost_given=sum(c.given for c in costs),
        unknown_models=unknown,
        error=_arr([r["has_error"] for r in rows]),
        truncated=_arr([r["is_truncated"] for r in rows]),
        zero=_arr(zero_vals),
        tool_calls={k: v / n_b for k, v in tools.most_common(6)} if n_b else {},
        sub_calls=sub_total / n_b if n_b else math.nan,
        sub_calls_per_batch=sub_total / batches if batches else math.nan,
        repeated_error_max=rep_max,
        repeated_error=rep_text,
        outlier_ids=[rows[i]["id"] for i in out_idx],
        capped=capped,
    )


# ---------------------------------------------------------------- the table


@dataclass
class Cell:
    text: str  # the value as the seed prints it: "0.785 (σ 0.100)"
    value: float = math.nan  # the headline number (for CSV)
    sd: float = math.nan
    lo: float = math.nan  # 95 % CI of the value itself
    hi: float = math.nan
    n: int = 0
    note: str = ""


@dataclass
class Delta:
    diff: stats.DiffResult
    better: int  # +1 the change is good, -1 bad, 0 neutral or not significant

    @property
    def significant(self) -> bool:
        d = self.diff
        return not d.too_small and (d.lo > 0 or d.hi < 0)


@dataclass
class Row:
    key: str
    label: str
    cells: list[Cell]
    deltas: list[Delta | None] = field(default_factory=list)  # None for the baseline and undefined
    fmt: str = "{:+.3f}"
    rel: bool = True  # show relative change


@dataclass
class Comparison:
    runs: list[RunData]
    baseline: int
    options: Options
    rows: list[Row]
    effects: list[tuple[Effect, stats.DiffResult]]
    paired_examples: int  # examples shared by all runs
    k: int  # pass@k's k (0: not applicable)

    @property
    def base(self) -> RunData:
        return self.runs[self.baseline]


def _fmt(v: float, digits: int = 3) -> str:
    return "—" if v is None or math.isnan(v) else f"{v:.{digits}f}"


def _int_fmt(v: float) -> str:
    return "—" if math.isnan(v) else f"{v:,.0f}"


def _money(v: float) -> str:
    if math.isnan(v):
        return "—"
    if abs(v) >= 1:
        return f"${v:,.2f}"
    if abs(v) >= 0.01:
        return f"${v:.3f}"
    return f"${v:.4f}"


def _finite(a: np.ndarray) -> np.ndarray:
    return a[~np.isnan(a)]


def _rate_cell(a: np.ndarray) -> Cell:
    f = _finite(a)
    if f.size == 0:
        return Cell("—")
    k = int(f.sum())
    return Cell(f"{100 * k / f.size:.0f}% ({k}/{f.size})", value=k / f.size, n=int(f.size))


def _pass_at(data: RunData, threshold: float, k: int) -> tuple[list[str], list[float]]:
    groups: dict[str, list[float]] = {}
    for key, r in zip(data.example_keys, data.reward, strict=True):
        if not math.isnan(r):
            groups.setdefault(key, []).append(r)
    keys, vals = [], []
    for key, rs in groups.items():
        if len(rs) < k:
            continue
        c = sum(1 for r in rs if r >= threshold - PASS_TOL)
        keys.append(key)
        vals.append(stats.pass_at_k(len(rs), c, k))
    return keys, vals


def comparison_build(*, runs: Sequence[Run], options: Options) -> Comparison:
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise CompareError(f"runs: compare {MIN_RUNS} to {MAX_RUNS} runs, got {len(runs)}")
    if not 0 <= options.baseline < len(runs):
        raise CompareError("baseline: not one of the compared runs")
    prices = pricing.price_table(project=runs[0].project)
    data = [run_data(r, letter, zero=options.zero, prices=prices) for r, letter in zip(runs, letters(len(runs)),
                                                                                       strict=True)]
    base = data[options.baseline]
    # Fewer resamples for big unpaired runs: the page must answer in about a second.
    biggest = max(d.n for d in data) or 1
    n_res = int(min(options.n_resamples, max(1000, 20_000_000 // biggest)))

    def diff(a: RunData, b: RunData, va: np.ndarray, vb: np.ndarray) -> stats.DiffResult:
        return stats.bootstrap_diff(
            va, vb, paired_keys_a=a.example_keys, paired_keys_b=b.example_keys,
            n_resamples=n_res, seed=options.seed,
        )

    def row(key: str, label: str, cells: list[Cell], attr: str | None, better: int, *, fmt: str = "{:+.3f}",
            rel: bool = True) -> Row:
        deltas: list[Delta | None] = []
        for i, d in enumerate(data):
            if attr is None or i == options.baseline:
                deltas.append(None)
                continue
            va, vb = getattr(base, attr), getattr(d, attr)
            if _finite(va).size == 0 or _finite(vb).size == 0:
                deltas.append(None)
                continue
            deltas.append(Delta(diff(base, d, va, vb), better))
        return Row(key, label, cells, deltas, fmt, rel)

    rows: list[Row] = []
    reward_cells = []
    range_cells = []
    turn_cells = []
    for d in data:
        r = _finite(d.reward)
        ci = stats.bootstrap_ci(r, n_resamples=min(n_res, 5000), seed=options.seed) if r.size else None
        reward_cells.append(Cell(
            f"{_fmt(stats.mean(r))} (σ {_fmt(stats.std(r))})", value=stats.mean(r), sd=stats.std(r),
            lo=ci.lo if ci else math.nan, hi=ci.hi if ci else math.nan, n=int(r.size),
        ))
        range_cells.append(Cell(f"{_fmt(float(r.min()))} — {_fmt(float(r.max()))}" if r.size else "—",
                                value=float(r.min()) if r.size else math.nan))
        t = _finite(d.turns)
        turn_cells.append(Cell(
            f"{stats.mean(t):.2f} ({t.min():.0f}–{t.max():.0f})" if t.size else "—",
            value=stats.mean(t), sd=stats.std(t), n=int(t.size),
        ))
    rows.append(row("reward", "Average reward", reward_cells, "reward", +1))
    rows.append(Row("reward_range", "Reward range", range_cells, [None] * len(data)))
    rows.append(row("turns", "Average turns (range)", turn_cells, "turns", 0, fmt="{:+.2f}"))
    rows.append(row("turns_sd", "Turns σ", [Cell(_fmt(c.sd, 3), value=c.sd) for c in turn_cells], None, 0))
    for attr, label in (("input_tokens", "Input tokens / rollout"), ("output_tokens", "Output tokens / rollout")):
        cells = []
        for d in data:
            v = _finite(getattr(d, attr))
            cells.append(Cell(_int_fmt(stats.mean(v)), value=stats.mean(v), sd=stats.std(v), n=int(v.size)))
        rows.append(row(attr, label, cells, attr, -1, fmt="{:+,.0f}"))
    cost_cells = []
    for d in data:
        c = _finite(d.cost)
        note = ""
        if d.unknown_models:
            note = "no price for " + ", ".join(d.unknown_models[:3])
        elif c.size and d.cost_given < c.size:
            note = "priced from tokens" if d.cost_given == 0 else f"{c.size - d.cost_given} priced from tokens"
        root, sub = stats.mean(d.cost_root), stats.mean(d.cost_sub)
        text = _money(stats.mean(c))
        if c.size and not math.isnan(sub) and sub > 0:
            text += f" (root {_money(root)} + sub {_money(sub)})"
        cost_cells.append(Cell(text, value=stats.mean(c), n=int(c.size), note=note))
    rows.append(row("cost", "Cost / rollout", cost_cells, "cost", -1, fmt="{:+.4f}"))
    total_cells = [Cell(_money(float(_finite(d.cost).sum())) if _finite(d.cost).size else "—",
                        value=float(_finite(d.cost).sum()) if _finite(d.cost).size else math.nan) for d in data]
    rows.append(Row("cost_total", "Cost (total)", total_cells, [None] * len(data)))
    rows.append(row("error_rate", "Error rate", [_rate_cell(d.error) for d in data], "error", -1, fmt="{:+.3f}",
                    rel=False))
    rows.append(row("truncation_rate", "Truncation rate", [_rate_cell(d.truncated) for d in data], "truncated", -1,
                    fmt="{:+.3f}", rel=False))
    if options.zero is not None:
        rows.append(row("zero_rate", options.zero.label, [_rate_cell(d.zero) for d in data], "zero", 0,
                        fmt="{:+.3f}", rel=False))

    # pass@k where examples have several rollouts: k = the smallest group size that every run reaches.
    group_sizes = [min(Counter(d.example_keys).values()) if d.n else 0 for d in data]
    k = min(group_sizes) if group_sizes else 0
    pass_rows_k = [1] + ([k] if k > 1 else [])
    for kk in pass_rows_k:
        cells, per = [], []
        for d in data:
            keys, vals = _pass_at(d, options.pass_threshold, kk)
            per.append((keys, np.array(vals, dtype=float)))
            cells.append(Cell(f"{_fmt(stats.mean(vals))}" if vals else "—", value=stats.mean(vals), n=len(vals)))
        deltas: list[Delta | None] = []
        for i, (pkeys, pvals) in enumerate(per):
            bkeys, bvals = per[options.baseline]
            if i == options.baseline or not len(pvals) or not len(bvals):
                deltas.append(None)
                continue
            deltas.append(Delta(stats.bootstrap_diff(bvals, pvals, paired_keys_a=bkeys, paired_keys_b=pkeys,
                                                     n_resamples=n_res, seed=options.seed), +1))
        thr = f"reward ≥ {options.pass_threshold:g}"
        rows.append(Row(f"pass@{kk}", f"pass@{kk} ({thr})", cells, deltas, "{:+.3f}", True))

    rows.append(Row("n", "Rollouts (examples)", [
        Cell(f"{d.n:,} ({len(set(d.example_keys)):,})" + (" — capped" if d.capped else ""), value=d.n)
        for d in data], [None] * len(data)))

    effects = [
        (e, diff(data[e.a], data[e.b], data[e.a].reward, data[e.b].reward))
        for e in parse_effects(options.effects_query, len(data))
    ]
    shared = set(data[0].example_keys)
    for d in data[1:]:
        shared &= set(d.example_keys)
    return Comparison(data, options.baseline, options, rows, effects, len(shared), k if k > 1 else 0)


def behaviour_rows(c: Comparison) -> list[tuple[str, list[str]]]:
    """Behaviour lines (text only): tool calls per rollout, sub-calls, repeated errors, outliers."""
    tools = sorted({t for d in c.runs for t in d.tool_calls})[:8]
    out: list[tuple[str, list[str]]] = []
    for t in tools:
        out.append((f"{t} calls / rollout", [_fmt(d.tool_calls.get(t, 0.0), 2) if d.tool_calls else "—"
                                              for d in c.runs]))
    if any(not math.isnan(d.sub_calls_per_batch) for d in c.runs):
        out.append(("Sub-calls / batch", [_fmt(d.sub_calls_per_batch, 1) for d in c.runs]))
    if any(d.repeated_error_max > 1 for d in c.runs):
        out.append(("Most repeated error", [
            f"{d.repeated_error_max}× {d.repeated_error[:80]}" if d.repeated_error_max > 1 else "—" for d in c.runs
        ]))
    out.append(("Turn outliers", [
        f"{len(d.outlier_ids)} of {d.n}" if d.outlier_ids else "none" for d in c.runs
    ]))
    return out


def delta_text(delta: Delta | None, row: Row) -> str:
    if delta is None:
        return ""
    d = delta.diff
    if math.isnan(d.estimate):
        return "—"
    text = row.fmt.format(d.estimate)
    if row.rel and not math.isnan(d.rel_estimate):
        text += f" ({100 * d.rel_estimate:+.1f}%)"
    if d.too_small:
        if d.estimate == 0 and d.lo == d.hi == 0:
            return "no change"
        return text + " · too few data to tell"
    return text + f" [95% CI {row.fmt.format(d.lo)}, {row.fmt.format(d.hi)}]"


def per_example_rewards(c: Comparison, limit: int = 50) -> tuple[list[str], list[list[str]]]:
    """Rewards per example (rollouts in order), for the "raw output" block of the report."""
    order: list[str] = []
    seen: set[str] = set()
    for d in c.runs:
        for k in d.example_keys:
            if k not in seen:
                seen.add(k)
                order.append(k)
    order = order[:limit]
    cells: list[list[str]] = []
    for key in order:
        line = []
        for d in c.runs:
            vals = [r for kk, r in zip(d.example_keys, d.reward, strict=True) if kk == key]
            line.append(", ".join(_fmt(v) for v in vals[:16]) if vals else "—")
        cells.append(line)
    return order, cells
