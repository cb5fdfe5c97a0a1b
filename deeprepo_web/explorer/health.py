"""GRPO health of a run per step: reward quantiles, dead groups (all fail / all pass), turns, tokens, cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache

from deeprepo_web.analysis.grpo import DeadRule
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.selectors import REWARD_BOUNDS_SQL, finite_or_none, reward_bounds

HEALTH_MAX_STEPS = 5000

# One pass over a run's rollouts through the (run, step, example) index: groups per (step, example),
# then per step. Bounded by the run's rollouts; the step count caps the output. A dead group's kind
# is DeadRule's: its thresholds are the parameters (the group's common reward is its min, as in
# DeadRule.kind's first reward, both within tol).
_HEALTH_SQL = """
WITH base AS (
    SELECT step, example_id, reward, num_turns, input_tokens, output_tokens, cost
    FROM runs_rollout WHERE run_id = %(run)s AND step IS NOT NULL
), g AS (
    SELECT step, example_id, count(reward) AS n, min(reward) AS mn, max(reward) AS mx
    FROM base GROUP BY step, example_id
), gs AS (
    SELECT g.step,
           count(*) FILTER (WHERE g.n > 0) AS groups,
           count(*) FILTER (WHERE g.n > 1 AND g.mx - g.mn <= %(tol)s) AS dead,
           count(*) FILTER (WHERE g.n > 1 AND g.mx - g.mn <= %(tol)s AND g.mn <= %(fail_at)s + %(tol)s) AS all_fail,
           count(*) FILTER (WHERE g.n > 1 AND g.mx - g.mn <= %(tol)s AND g.mn > %(fail_at)s + %(tol)s
                            AND g.mn >= %(pass_at)s - %(tol)s) AS all_pass
    FROM g GROUP BY g.step
), st AS (
    SELECT step, count(*) AS rollouts, avg(reward) AS mean, stddev_pop(reward) AS std,
           percentile_cont(ARRAY[0.1, 0.25, 0.5, 0.75, 0.9]) WITHIN GROUP (ORDER BY reward) AS q,
           avg(num_turns) AS turns, avg(input_tokens) AS tin, avg(output_tokens) AS tout,
           sum(cost) AS cost
    FROM base GROUP BY step
)
SELECT st.step, st.rollouts, gs.groups, gs.dead, gs.all_fail, gs.all_pass, st.mean, st.std, st.q,
       st.turns, st.tin, st.tout, st.cost
FROM st JOIN gs ON gs.step = st.step
ORDER BY st.step DESC LIMIT %(limit)s
"""


@dataclass
class Health:
    step: list[int] = field(default_factory=list)
    rollouts: list[int] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    frac_dead: list[float | None] = field(default_factory=list)
    frac_all_fail: list[float | None] = field(default_factory=list)
    frac_all_pass: list[float | None] = field(default_factory=list)
    mean: list[float | None] = field(default_factory=list)
    std: list[float | None] = field(default_factory=list)
    p10: list[float | None] = field(default_factory=list)
    p25: list[float | None] = field(default_factory=list)
    p50: list[float | None] = field(default_factory=list)
    p75: list[float | None] = field(default_factory=list)
    p90: list[float | None] = field(default_factory=list)
    turns: list[float | None] = field(default_factory=list)
    input_tokens: list[float | None] = field(default_factory=list)
    output_tokens: list[float | None] = field(default_factory=list)
    cost: list[float | None] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _f(value: Any) -> float | None:
    return None if value is None else finite_or_none(float(value))


def grpo_health(*, run: Run, max_steps: int = HEALTH_MAX_STEPS,
                bounds: tuple[float | None, float | None] | None = None) -> Health:
    """Per training step: dead-group fractions (all-fail / all-pass), reward quantiles, turns, tokens, cost.

    A group is the rollouts of one example at one step; it is dead (no GRPO signal) when it has
    two or more rewards and they are all equal; its kind is `DeadRule.for_rewards` of the run's
    rewards, as on the Groups tab. The latest `max_steps` steps are kept.
    """
    rule = DeadRule.for_rewards(*(bounds or reward_bounds(run=run)))
    with read_cursor() as cur:
        cur.execute(_HEALTH_SQL, {"run": run.pk, "tol": rule.tol, "fail_at": rule.fail_at, "pass_at": rule.pass_at,
                                  "limit": max_steps})
        rows = cur.fetchall()
    out = Health()
    for step, n, groups, dead, fail, pas, mean, std, q, turns, tin, tout, cost in reversed(rows):
        out.step.append(step)
        out.rollouts.append(n)
        out.groups.append(groups)
        out.frac_dead.append(dead / groups if groups else None)
        out.frac_all_fail.append(fail / groups if groups else None)
        out.frac_all_pass.append(pas / groups if groups else None)
        out.mean.append(_f(mean))
        out.std.append(_f(std))
        qs = list(q) if q is not None else [None] * 5
        for name, value in zip(("p10", "p25", "p50", "p75", "p90"), qs, strict=True):
            getattr(out, name).append(_f(value))
        out.turns.append(_f(turns))
        out.input_tokens.append(_f(tin))
        out.output_tokens.append(_f(tout))
        out.cost.append(_f(cost))
    return out


# An open run page asks every few seconds; the answer only changes with the run's rollouts. Kept a
# day: a key that no longer matches (a newer rollout, a rewrite) just ages out.
HEALTH_CACHE_SECONDS = 24 * 3600

# What the answer depends on, in one round trip through indexes: the reward range, the newest
# rollout id and when rollouts last changed in place.
_STATE_SQL = (f"SELECT b.lo, b.hi, (SELECT max(id) FROM runs_rollout WHERE run_id = %(run)s), r.rollouts_rewritten_at "
              f"FROM runs_run r, ({REWARD_BOUNDS_SQL}) b(lo, hi) WHERE r.id = %(run)s")


def grpo_health_cached(*, run: Run, max_steps: int = HEALTH_MAX_STEPS) -> dict[str, Any]:
    """`grpo_health` as a dict, computed once per state of the run's rollouts: the key is the newest
    rollout id (ingest appends), the reward range (it sets the dead-group rule) and the run's
    rollouts_rewritten_at, which `runs.services.runs_rewritten` moves when rollouts change in place
    (a rebuild, rewards attached by an import keep every id). Points arriving do not change it. A
    hit costs one query, no rescan."""
    with read_cursor() as cur:  # read here, not from `run`: the caller's copy may be older
        cur.execute(_STATE_SQL, {"run": run.pk})
        lo, hi, newest, rewritten = cur.fetchone() or (None, None, None, None)
    stamp = rewritten.isoformat() if rewritten else ""  # no spaces: a memcached key takes none
    key = f"grpo-health:3:{run.pk}:{newest}:{lo!r}:{hi!r}:{stamp}:{max_steps}"
    found: dict[str, Any] | None = cache.get(key)
    if found is None:
        found = grpo_health(run=run, max_steps=max_steps, bounds=(lo, hi)).as_dict()
        cache.set(key, found, HEALTH_CACHE_SECONDS)
    return found
