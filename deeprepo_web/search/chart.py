"""How often a pattern occurs over training, per run: bars drawn as SVG rectangles on the server
(no script, nothing from the data but numbers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from deeprepo_web.runs.models import Run

if TYPE_CHECKING:
    from deeprepo_web.search.selectors import Sample

WIDTH, HEIGHT = 600, 60
MAX_RUNS = 50  # the runs with the most matches; a project may have thousands
# Bars a chart draws at most: steps are grouped past it. A run of 20,000 steps drew 20,000 rectangles
# per chart (0.6-0.9 s of a page at 666,667 rollouts, docs/scale.md), narrower than a pixel.
MAX_BARS = 300
# A chart drawn from a sample has bars of at least this many tested rollouts: a share of 10 is ±30 %.
SAMPLED_PER_BAR = 40


@dataclass
class Bar:
    x: float
    y: float
    w: float
    h: float
    title: str


@dataclass
class RunCounts:
    run: Run
    matched: int
    total: int
    bars: list[Bar]
    eval_only: bool  # every matching rollout has no step (an eval)
    first_step: int | None = None
    last_step: int | None = None
    tested: int = 0  # drawn from a sample of this many of the run's rollouts (0: every one counted)


@dataclass
class StepGroup:
    first: int  # the group's first and last step (the same when steps are not grouped)
    last: int
    x: float  # where its bar starts, and its width, in chart units
    w: float


def step_groups(steps: list[int], lo: int, hi: int, bars: int = MAX_BARS) -> list[tuple[StepGroup, list[int]]]:
    """The sorted `steps` in groups of equal width over the range lo..hi, at most `bars`: each group
    with the steps it holds (groups holding none are left out)."""
    span = hi - lo + 1
    size = -(-span // bars)  # steps a group covers
    w = max(1.0, WIDTH * size / span - 1)
    out: list[tuple[StepGroup, list[int]]] = []
    for s in steps:
        first = lo + (s - lo) // size * size
        if not out or out[-1][0].first != first:
            out.append((StepGroup(first, min(first + size - 1, hi), round((first - lo) * WIDTH / span, 2), round(w, 2)), []))
        out[-1][1].append(s)
    return out


# A bar that counts anything is drawn at least this wide and high (chart units of WIDTH x HEIGHT; the page
# shows 60 units as 40 px): a text in 1 of a step's 512 rollouts was 0.12 units high, and over 280 steps each
# bar 1.1 wide: nothing to see or hover.
MIN_BAR_W, MIN_BAR_H = 4.0, 6.0


def bar(group: StepGroup, share: float, title: str) -> Bar:
    """The bar of `group`, as high as `share` (0 to 1) of the chart; one of a share above 0 stays visible,
    widened about its own place (its title says the exact numbers)."""
    x, w, h = group.x, group.w, HEIGHT * share
    if share > 0:
        h = max(h, MIN_BAR_H)
        if w < MIN_BAR_W:
            x, w = min(max(0.0, x - (MIN_BAR_W - w) / 2), WIDTH - MIN_BAR_W), MIN_BAR_W
    return Bar(x=round(x, 2), y=round(HEIGHT - h, 2), w=round(w, 2), h=round(h, 2), title=title)


def steps_label(group: StepGroup) -> str:
    return f"step {group.first}" if group.first == group.last else f"steps {group.first}-{group.last}"


def chart_rows(counts: dict[int, dict[int | None, tuple[int, int]]], runs: dict[int, Run],
               sample: Sample | None = None) -> list[RunCounts]:
    """The chart's rows from search_counts' counts, or from search_sample's (`sample`: its one run's matches
    are then an estimate, and its bars hold SAMPLED_PER_BAR tested rollouts or more)."""
    out = []
    for run_id, per_step in counts.items():
        matched = sum(m for m, _ in per_step.values())
        if not matched:
            continue
        total = sum(t for _, t in per_step.values())
        steps = sorted(s for s in per_step if s is not None)
        of = "sampled rollouts" if sample else "rollouts"
        bars = []
        if steps:
            most = max(1, min(MAX_BARS, total // SAMPLED_PER_BAR)) if sample else MAX_BARS
            for group, members in step_groups(steps, steps[0], steps[-1], most):
                m = sum(per_step[s][0] for s in members)
                t = sum(per_step[s][1] for s in members)
                rate = m / t if t else 0.0
                share = "<1%" if 0 < rate < 0.005 else f"{rate:.0%}"
                bars.append(bar(group, rate, f"{steps_label(group)}: {m} of {t} {of} ({share})"))
        row = RunCounts(run=runs[run_id], matched=matched, total=total, bars=bars, eval_only=not steps,
                        first_step=steps[0] if steps else None, last_step=steps[-1] if steps else None)
        if sample:
            row.matched, row.total, row.tested = sample.estimated, sample.rollouts, total
        out.append(row)
    out.sort(key=lambda rc: (-rc.matched, rc.run.name))
    return out[:MAX_RUNS]
