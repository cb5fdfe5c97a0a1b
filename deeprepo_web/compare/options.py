"""What a comparison is of: the runs (by id or name, in order) and its options (baseline, zero-X rate,
pass threshold, effects), each parsed with a one-line error naming what was wrong."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.models import Rollout, Run

MIN_RUNS, MAX_RUNS = 2, 10
_NAME_RE = re.compile(r"^[\w.\-/: ]{1,100}$")


class CompareError(ValueError):
    """A bad selection or option; the message is one line naming what was wrong."""


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


def parse_effects(value: str | None, n_runs: int, order: Sequence[int] | None = None) -> list[Effect]:
    """`A>B:Model size effect;B>C:RL training effect`. Without a value: each step and first -> last,
    the runs taken in `order` (indexes; default: as listed)."""
    labels = letters(n_runs)
    if not value or not value.strip():
        seq = list(order) if order is not None else list(range(n_runs))
        pairs = [(seq[i], seq[i + 1], "") for i in range(n_runs - 1)]
        if n_runs > 2:
            pairs.append((seq[0], seq[-1], "Combined"))
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


def runs_in_time_order(runs: Sequence[Run]) -> list[int]:
    """Indexes of `runs` earliest first: by checkpoint step (a run without one, like the base model's
    eval, comes first), then by creation. The default baseline is the first and the default effects
    follow this order, so an improvement reads as one whatever the order the runs were ticked in."""
    def key(i: int) -> tuple[bool, int, Any]:
        run = runs[i]
        return (run.checkpoint_step is not None, run.checkpoint_step or 0, run.created_at)

    return sorted(range(len(runs)), key=key)


def runs_use_tool(runs: Sequence[Run], tool: str) -> bool:
    """Whether any rollout of these runs called `tool`: the rollout rows' `tools` (their GIN index). Asked of
    the behaviour counts, a tool nobody called read every rollout of the runs: 94 ms for two runs of 300,000
    on every compare page (docs/scale.md)."""
    return Rollout.objects.filter(run__in=runs, tools__contains=[tool]).exists()



def options_for(runs: Sequence[Run], *, baseline: int = 0, zero: str = "", pass_threshold: float = 1.0,
                effects: str = "") -> Options:
    """Options from what a user typed (query string or command line); CompareError names a bad one."""
    spec = parse_zero(zero)
    if spec is None and runs_use_tool(runs, "llm_batch"):
        spec = ZeroSpec("tool", ("llm_batch",))  # agents that delegate: the zero-delegation rate
    parse_effects(effects, len(runs))  # validate before the heavy part
    return Options(baseline=baseline, zero=spec, pass_threshold=pass_threshold, effects_query=effects)
