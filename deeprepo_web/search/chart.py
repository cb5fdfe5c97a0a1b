"""How often a pattern occurs over training, per run: bars drawn as SVG rectangles on the server
(no script, nothing from the data but numbers)."""

from __future__ import annotations

from dataclasses import dataclass

from deeprepo_web.runs.models import Run

WIDTH, HEIGHT = 600, 60
MAX_RUNS = 50  # the runs with the most matches; a project may have thousands


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


def chart_rows(counts: dict[int, dict[int | None, tuple[int, int]]], runs: dict[int, Run]) -> list[RunCounts]:
    out = []
    for run_id, per_step in counts.items():
        matched = sum(m for m, _ in per_step.values())
        if not matched:
            continue
        total = sum(t for _, t in per_step.values())
        steps = sorted(s for s in per_step if s is not None)
        bars = []
        if steps:
            lo, hi = steps[0], steps[-1]
            span = max(1, hi - lo + 1)
            w = max(1.0, WIDTH / span - 1)
            for s in steps:
                m, t = per_step[s]
                rate = m / t if t else 0.0
                h = HEIGHT * rate
                bars.append(Bar(x=round((s - lo) * WIDTH / span, 2), y=round(HEIGHT - h, 2), w=round(w, 2),
                                h=round(h, 2), title=f"step {s}: {m} of {t} rollouts ({rate:.0%})"))
        out.append(RunCounts(run=runs[run_id], matched=matched, total=total, bars=bars, eval_only=not steps,
                             first_step=steps[0] if steps else None, last_step=steps[-1] if steps else None))
    out.sort(key=lambda rc: (-rc.matched, rc.run.name))
    return out[:MAX_RUNS]
