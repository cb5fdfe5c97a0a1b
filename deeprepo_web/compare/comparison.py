"""The before / after table of a set of runs: per-run aggregates of their rollouts, and for every run
but the baseline the change against it with 95 % bootstrap intervals (paired by example when the
runs share examples). One place computes the numbers; the page, the Markdown / CSV exports, the
share page and `manage.py compare` all render this.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from deeprepo_web.analysis import stats
from deeprepo_web.compare import pricing
from deeprepo_web.compare.options import (
    MAX_RUNS,
    MIN_RUNS,
    CompareError,
    Effect,
    Options,
    letters,
    parse_effects,
    runs_in_time_order,
)
from deeprepo_web.compare.rundata import RunData, run_data
from deeprepo_web.labels.selectors import labels_on_rollouts
from deeprepo_web.runs.models import Run

PASS_TOL = 1e-9

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


def rate_cell(a: np.ndarray) -> Cell:
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


@dataclass(frozen=True)
class _Boot:
    """How this comparison bootstraps: resamples (fewer for big unpaired runs) and the seed."""

    n_resamples: int
    seed: int

    def diff(self, a: RunData, b: RunData, va: np.ndarray, vb: np.ndarray) -> stats.DiffResult:
        return stats.bootstrap_diff(va, vb, paired_keys_a=a.example_keys, paired_keys_b=b.example_keys,
                                    n_resamples=self.n_resamples, seed=self.seed)


def _reward_cell(d: RunData, boot: _Boot) -> Cell:
    r = _finite(d.reward)
    ci = stats.bootstrap_ci(r, n_resamples=min(boot.n_resamples, 5000), seed=boot.seed) if r.size else None
    return Cell(f"{_fmt(stats.mean(r))} (σ {_fmt(stats.std(r))})", value=stats.mean(r), sd=stats.std(r),
                lo=ci.lo if ci else math.nan, hi=ci.hi if ci else math.nan, n=int(r.size))


def _range_cell(d: RunData, boot: _Boot) -> Cell:
    r = _finite(d.reward)
    if not r.size:
        return Cell("—", value=math.nan)
    return Cell(f"{_fmt(float(r.min()))} — {_fmt(float(r.max()))}", value=float(r.min()))


def _turns_cell(d: RunData, boot: _Boot) -> Cell:
    t = _finite(d.turns)
    return Cell(f"{stats.mean(t):.2f} ({t.min():.0f}–{t.max():.0f})" if t.size else "—",
                value=stats.mean(t), sd=stats.std(t), n=int(t.size))


def _turns_sd_cell(d: RunData, boot: _Boot) -> Cell:
    sd = stats.std(_finite(d.turns))
    return Cell(_fmt(sd, 3), value=sd)


def _count_cell(attr: str) -> Callable[[RunData, _Boot], Cell]:
    def cell(d: RunData, boot: _Boot) -> Cell:
        v = _finite(getattr(d, attr))
        return Cell(_int_fmt(stats.mean(v)), value=stats.mean(v), sd=stats.std(v), n=int(v.size))

    return cell


def _cost_cell(d: RunData, boot: _Boot) -> Cell:
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
    return Cell(text, value=stats.mean(c), n=int(c.size), note=note)


def _cost_total_cell(d: RunData, boot: _Boot) -> Cell:
    c = _finite(d.cost)
    return Cell(_money(float(c.sum())), value=float(c.sum())) if c.size else Cell("—", value=math.nan)


def _rate(attr: str) -> Callable[[RunData, _Boot], Cell]:
    return lambda d, boot: rate_cell(getattr(d, attr))


def _n_cell(d: RunData, boot: _Boot) -> Cell:
    return Cell(f"{d.n:,} ({len(set(d.example_keys)):,})" + (" — capped" if d.capped else ""), value=d.n)


@dataclass(frozen=True)
class _RowSpec:
    key: str
    label: str
    cell: Callable[[RunData, _Boot], Cell]
    attr: str | None = None  # the RunData array whose change against the baseline is the delta; None: no delta
    better: int = 0  # +1 up is good, -1 down is good
    fmt: str = "{:+.3f}"
    rel: bool = True


# The before/after table of a paper, top to bottom; the zero-X rate and pass@k rows follow.
_ROWS = (
    _RowSpec("reward", "Average reward", _reward_cell, "reward", +1),
    _RowSpec("reward_range", "Reward range", _range_cell),
    _RowSpec("turns", "Average model turns (range)", _turns_cell, "turns", 0, "{:+.2f}"),
    _RowSpec("turns_sd", "Model turns σ", _turns_sd_cell),
    _RowSpec("input_tokens", "Input tokens / rollout", _count_cell("input_tokens"), "input_tokens", -1, "{:+,.0f}"),
    _RowSpec("output_tokens", "Output tokens / rollout", _count_cell("output_tokens"), "output_tokens", -1,
             "{:+,.0f}"),
    _RowSpec("cost", "Cost / rollout", _cost_cell, "cost", -1, "{:+.4f}"),
    _RowSpec("cost_total", "Cost (total)", _cost_total_cell),
    _RowSpec("error_rate", "Error rate", _rate("error"), "error", -1, rel=False),
    _RowSpec("truncation_rate", "Truncation rate", _rate("truncated"), "truncated", -1, rel=False),
)
_N_ROW = _RowSpec("n", "Rollouts (examples)", _n_cell)


def _row(spec: _RowSpec, data: list[RunData], baseline: int, boot: _Boot) -> Row:
    base = data[baseline]
    deltas: list[Delta | None] = []
    for i, d in enumerate(data):
        va, vb = (getattr(base, spec.attr), getattr(d, spec.attr)) if spec.attr else (None, None)
        if va is None or vb is None or i == baseline or _finite(va).size == 0 or _finite(vb).size == 0:
            deltas.append(None)
        else:
            deltas.append(Delta(boot.diff(base, d, va, vb), spec.better))
    return Row(spec.key, spec.label, [spec.cell(d, boot) for d in data], deltas, spec.fmt, spec.rel)


def _pass_rows(data: list[RunData], options: Options, boot: _Boot) -> tuple[list[Row], int]:
    """pass@1, and pass@k where examples have several rollouts: k = the smallest group every run reaches."""
    group_sizes = [min(Counter(d.example_keys).values()) if d.n else 0 for d in data]
    k = min(group_sizes) if group_sizes else 0
    rows = []
    for kk in [1] + ([k] if k > 1 else []):
        per = [_pass_at(d, options.pass_threshold, kk) for d in data]
        cells = [Cell(f"{_fmt(stats.mean(vals))}" if vals else "—", value=stats.mean(vals), n=len(vals))
                 for _, vals in per]
        bkeys, bvals = per[options.baseline]
        deltas: list[Delta | None] = []
        for i, (pkeys, pvals) in enumerate(per):
            if i == options.baseline or not pvals or not bvals:
                deltas.append(None)
                continue
            diff = stats.bootstrap_diff(np.array(bvals, dtype=float), np.array(pvals, dtype=float),
                                        paired_keys_a=bkeys, paired_keys_b=pkeys,
                                        n_resamples=boot.n_resamples, seed=boot.seed)
            deltas.append(Delta(diff, +1))
        thr = f"reward ≥ {options.pass_threshold:g}"
        rows.append(Row(f"pass@{kk}", f"pass@{kk} ({thr})", cells, deltas, "{:+.3f}", True))
    return rows, k if k > 1 else 0


def label_rate_rows(data: list[RunData], baseline: int, boot: _Boot | None = None) -> list[Row]:
    """Per label, the share of each run's rollouts that carry it, with the bootstrap CI of the change
    against the baseline (resampled as `Options()` says unless a comparison passes its own)."""
    if boot is None:
        boot = _Boot(Options().n_resamples, Options().seed)
    marked = labels_on_rollouts([i for d in data for i in d.ids])
    rows = []
    for label, on in marked:
        arrays = [np.array([1.0 if i in on else 0.0 for i in d.ids], dtype=float) for d in data]
        deltas: list[Delta | None] = [
            None if i == baseline or not len(a) or not len(arrays[baseline])
            else Delta(boot.diff(data[baseline], d, arrays[baseline], a), 0)
            for i, (d, a) in enumerate(zip(data, arrays, strict=True))]
        rows.append(Row(f"label:{label.name}", f"Label rate: {label.name}", [rate_cell(a) for a in arrays],
                        deltas, "{:+.3f}", rel=False))
    return rows


def comparison_build(*, runs: Sequence[Run], options: Options) -> Comparison:
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise CompareError(f"runs: compare {MIN_RUNS} to {MAX_RUNS} runs, got {len(runs)}")
    if not 0 <= options.baseline < len(runs):
        raise CompareError("baseline: not one of the compared runs")
    prices = pricing.price_table(project=runs[0].project)
    data = [run_data(r, letter, zero=options.zero, prices=prices)
            for r, letter in zip(runs, letters(len(runs)), strict=True)]
    # Fewer resamples for big unpaired runs: the page must answer in about a second.
    biggest = max(d.n for d in data) or 1
    boot = _Boot(int(min(options.n_resamples, max(1000, 20_000_000 // biggest))), options.seed)
    specs = list(_ROWS)
    if options.zero is not None:
        specs.append(_RowSpec("zero_rate", options.zero.label, _rate("zero"), "zero", 0, rel=False))
    rows = [_row(spec, data, options.baseline, boot) for spec in specs]
    pass_rows, k = _pass_rows(data, options, boot)
    rows += [*pass_rows, *label_rate_rows(data, options.baseline, boot), _row(_N_ROW, data, options.baseline, boot)]
    effects = [(e, boot.diff(data[e.a], data[e.b], data[e.a].reward, data[e.b].reward))
               for e in parse_effects(options.effects_query, len(data), runs_in_time_order(runs))]
    shared = set(data[0].example_keys)
    for d in data[1:]:
        shared &= set(d.example_keys)
    return Comparison(data, options.baseline, options, rows, effects, len(shared), k)


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

