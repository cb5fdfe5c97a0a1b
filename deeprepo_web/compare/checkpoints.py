"""Reward across the evaluated checkpoints of a training run, and per-example flips between two.

The evals of a checkpoint are runs whose parent is the training run and whose checkpoint_step is
set. Bounded: at most MAX_CHECKPOINTS evals, MAX_ROLLOUTS rows each, FLIPS_SHOWN flips listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from deeprepo_web.analysis import stats
from deeprepo_web.compare.comparison import PASS_TOL
from deeprepo_web.compare.options import CompareError
from deeprepo_web.runs.models import Example, Rollout, Run

MAX_CHECKPOINTS = 100
MAX_ROLLOUTS = 20_000
FLIPS_SHOWN = 200


@dataclass
class ExampleState:
    example_id: int
    rewards: list[float]
    rollout_ids: list[int]  # in the order of the rewards

    @property
    def mean(self) -> float:
        return float(np.mean(self.rewards)) if self.rewards else math.nan

    def passes(self, threshold: float) -> bool:
        # An example passes at a checkpoint when at least half of its rollouts reach the threshold.
        ok = sum(1 for r in self.rewards if r >= threshold - PASS_TOL)
        return 2 * ok >= len(self.rewards) > 0

    def pick(self, threshold: float, passing: bool) -> int:
        """The rollout that shows the example's state: a passing one for a pass, a failing one else."""
        for r, rid in zip(self.rewards, self.rollout_ids, strict=True):
            if (r >= threshold - PASS_TOL) == passing:
                return rid
        return self.rollout_ids[0]


@dataclass
class Point:
    run: Run
    step: int
    n: int
    ci: stats.Interval
    sd: float
    pass_rate: float
    delta: stats.DiffResult | None  # vs the previous checkpoint, paired by example


@dataclass
class Flip:
    example: Example
    direction: str  # "fail_to_pass" | "pass_to_fail"
    mean_a: float
    mean_b: float
    rollout_a: int
    rollout_b: int


@dataclass
class Progression:
    train: Run
    points: list[Point]
    a: Point | None = None
    b: Point | None = None
    flips: list[Flip] = field(default_factory=list)
    n_fail_to_pass: int = 0
    n_pass_to_fail: int = 0
    n_shared: int = 0
    capped: bool = False


def checkpoint_runs(*, run: Run) -> list[Run]:
    return list(
        Run.objects.filter(parent=run, checkpoint_step__isnull=False).order_by("checkpoint_step", "created_at")[
            :MAX_CHECKPOINTS
        ]
    )


def _states(run: Run) -> tuple[dict[int, ExampleState], list[float], list[str], bool]:
    rows = [
        (rid, eid, float(reward))
        for rid, eid, reward in Rollout.objects.filter(run=run, reward__isnull=False)
        .order_by("example_id", "sample_index", "id")
        .values_list("id", "example_id", "reward")[: MAX_ROLLOUTS + 1]
        if reward is not None
    ]
    capped = len(rows) > MAX_ROLLOUTS
    rows = rows[:MAX_ROLLOUTS]
    states: dict[int, ExampleState] = {}
    for rid, eid, reward in rows:
        st = states.setdefault(eid, ExampleState(eid, [], []))
        st.rewards.append(reward)
        st.rollout_ids.append(rid)
    return states, [r[2] for r in rows], [str(r[1]) for r in rows], capped


def progression(*, run: Run, threshold: float = 1.0, a: str | None = None, b: str | None = None) -> Progression:
    evals = checkpoint_runs(run=run)
    # Two evals of one checkpoint (a re-run): keep the newest, the step is the x axis.
    by_step: dict[int, Run] = {}
    for r in evals:
        assert r.checkpoint_step is not None
        by_step[r.checkpoint_step] = r
    prog = Progression(train=run, points=[])
    cache: dict[int, tuple[dict[int, ExampleState], list[float], list[str], bool]] = {}
    prev: tuple[list[float], list[str]] | None = None
    for step in sorted(by_step):
        ev = by_step[step]
        states, rewards, keys, capped = _states(ev)
        cache[step] = (states, rewards, keys, capped)
        prog.capped |= capped
        ci = stats.bootstrap_ci(rewards, n_resamples=5000) if rewards else stats.Interval(math.nan, math.nan,
                                                                                          math.nan, 0)
        pass_rate = (sum(1 for s in states.values() if s.passes(threshold)) / len(states)) if states else math.nan
        delta = None
        if prev is not None and rewards and prev[0]:
            delta = stats.bootstrap_diff(prev[0], rewards, paired_keys_a=prev[1], paired_keys_b=keys,
                                         n_resamples=5000)
        prog.points.append(Point(ev, step, len(rewards), ci, stats.std(rewards), pass_rate, delta))
        prev = (rewards, keys)
    if len(prog.points) < 2:
        return prog
    steps = [p.step for p in prog.points]

    def pick(value: str | None, default: int) -> Point:
        if value is None or value == "":
            return prog.points[default]
        try:
            step = int(value)
        except ValueError:
            raise CompareError(f"checkpoint: {value[:20]!r} is not a step number") from None
        if step not in steps:
            raise CompareError(f"checkpoint: no eval of step {step}; evaluated steps are {steps[:20]}")
        return prog.points[steps.index(step)]

    prog.a, prog.b = pick(a, 0), pick(b, -1)
    sa, sb = cache[prog.a.step][0], cache[prog.b.step][0]
    shared = sorted(set(sa) & set(sb))
    prog.n_shared = len(shared)
    flips: list[tuple[int, str, ExampleState, ExampleState]] = []
    for eid in shared:
        pa, pb = sa[eid].passes(threshold), sb[eid].passes(threshold)
        if pa != pb:
            flips.append((eid, "fail_to_pass" if pb else "pass_to_fail", sa[eid], sb[eid]))
    prog.n_fail_to_pass = sum(1 for f in flips if f[1] == "fail_to_pass")
    prog.n_pass_to_fail = len(flips) - prog.n_fail_to_pass
    # Regressions first: they are what a reader has to look at.
    flips.sort(key=lambda f: (f[1] != "pass_to_fail", -abs(f[3].mean - f[2].mean)))
    flips = flips[:FLIPS_SHOWN]
    examples = Example.objects.in_bulk([f[0] for f in flips])
    for eid, direction, st_a, st_b in flips:
        passing_b = direction == "fail_to_pass"
        prog.flips.append(Flip(
            examples[eid], direction, st_a.mean, st_b.mean,
            st_a.pick(threshold, not passing_b), st_b.pick(threshold, passing_b),
        ))
    return prog
