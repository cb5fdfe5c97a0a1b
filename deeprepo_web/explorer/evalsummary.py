"""What an eval run scored, from its rollouts: mean reward with a 95 % bootstrap CI, pass rate, n,
per-component means, turns, tokens and cost; and the mean reward of eval runs for the runs table.

A run gets a summary when it is an eval or its rollouts have no training step. Reads are bounded:
at most MAX_ROLLOUTS rewards feed the intervals (the first ones stored, said on the page).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deeprepo_web.analysis import stats
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import Run, RunKind

MAX_ROLLOUTS = 20_000
MAX_COMPONENTS = 24
PASS_AT = 1.0  # a rollout passes with a reward of at least this (as compare's default threshold)
_TOL = 1e-9
_RESAMPLES = 4000


@dataclass
class EvalSummary:
    n: int  # rollouts
    scored: int  # rollouts with a reward
    reward: stats.Interval | None
    pass_rate: float | None
    components: list[tuple[str, stats.Interval]] = field(default_factory=list)
    turns: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost: float | None = None  # total
    errors: int = 0
    capped: bool = False

    def interval_of(self, key: str) -> stats.Interval | None:
        """The rollouts' interval for a metric key that stands for the reward or one component."""
        if key in ("reward", "reward/mean", "avg_reward", "eval/reward", "rewards/mean", "mean_reward"):
            return self.reward
        short = key.rsplit("/", 1)[-1]
        for name, ci in self.components:
            if key == name or short == name or key in (f"avg_{name}", f"reward/{name}", f"rewards/{name}"):
                return ci
        return None


def _f(value: Any) -> float | None:
    return None if value is None else float(value)


def _interval(values: list[float]) -> stats.Interval:
    return stats.bootstrap_ci(values, n_resamples=_RESAMPLES)


def wants_summary(*, run: Run, has_step_rollouts: bool) -> bool:
    return run.kind == RunKind.EVAL or not has_step_rollouts


def run_eval_summary(*, run: Run) -> EvalSummary | None:
    """The summary of `run`'s rollouts, or None when it has none."""
    with read_cursor() as cur:
        cur.execute(
            "SELECT count(*), count(reward), avg(num_turns), avg(input_tokens), avg(output_tokens), sum(cost), "
            "count(*) FILTER (WHERE error <> '') FROM runs_rollout WHERE run_id = %s",
            [run.pk],
        )
        n, scored, turns, tin, tout, cost, errors = cur.fetchone()
        if not n:
            return None
        cur.execute(
            "SELECT reward FROM runs_rollout WHERE run_id = %s AND reward IS NOT NULL ORDER BY id LIMIT %s",
            [run.pk, MAX_ROLLOUTS],
        )
        rewards = [float(r) for (r,) in cur.fetchall() if math.isfinite(r)]
        cur.execute(
            "SELECT c.key, array_agg((c.value #>> '{}')::float8) FROM "
            "(SELECT reward_components FROM runs_rollout WHERE run_id = %s ORDER BY id LIMIT %s) AS r, "
            "jsonb_each(r.reward_components) AS c WHERE jsonb_typeof(c.value) = 'number' "
            "GROUP BY c.key ORDER BY c.key LIMIT %s",
            [run.pk, MAX_ROLLOUTS, MAX_COMPONENTS],
        )
        components = [(key, _interval([v for v in values if math.isfinite(v)])) for key, values in cur.fetchall()]
    return EvalSummary(
        n=n, scored=scored,
        reward=_interval(rewards) if rewards else None,
        pass_rate=sum(1 for r in rewards if r >= PASS_AT - _TOL) / len(rewards) if rewards else None,
        components=components, turns=_f(turns), input_tokens=_f(tin), output_tokens=_f(tout), cost=_f(cost),
        errors=errors, capped=scored > MAX_ROLLOUTS,
    )


@dataclass
class Score:
    key: str
    value: float | None
    ci: stats.Interval | None = None


def is_curve(series: Mapping[str, Any]) -> bool:
    """Two steps or more, and a finite value among them (min_value is kept over finite values only)."""
    return (series["count"] or 0) > 1 and series.get("min_value") is not None


def scoreboard(*, series: Sequence[Mapping[str, Any]], summary: EvalSummary | None) -> list[Score]:
    """The run's metrics with a single point, as numbers; the CI where the rollouts give one."""
    out = []
    for s in series:
        if is_curve(s):
            continue
        key = str(s["key"])
        ci = summary.interval_of(key) if summary else None
        out.append(Score(key=key, value=_f(s["last_value"]), ci=ci if ci and ci.defined else None))
    return out


def eval_mean_rewards(*, runs: list[Run]) -> dict[int, tuple[float, int]]:
    """(mean reward, n) from the rollouts of each eval run, and of runs whose rollouts have no step.

    For the runs table's reward column where a run has no reward series: one grouped query.
    """
    if not runs:
        return {}
    evals = [r.pk for r in runs if r.kind == RunKind.EVAL]
    with read_cursor() as cur:
        cur.execute(
            "SELECT run_id, avg(reward), count(reward), bool_or(step IS NOT NULL) FROM runs_rollout "
            "WHERE run_id = ANY(%s) AND reward IS NOT NULL AND reward <> 'NaN' "
            "AND (step IS NULL OR run_id = ANY(%s)) GROUP BY run_id",
            [[r.pk for r in runs], evals],
        )
        return {run_id: (float(mean), count) for run_id, mean, count, _ in cur.fetchall()
                if count and math.isfinite(mean)}
