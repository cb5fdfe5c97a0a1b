"""GRPO health from rollouts on a hand-made run: dead groups split all-fail / all-pass, reward quantiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.factories import rollout

pytestmark = pytest.mark.django_db


def test_dead_groups_and_quantiles_per_step(team: Any) -> None:
    from deeprepo_web.explorer.health import grpo_health
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="hand-made")
    groups0 = {"A": [0, 0, 0, 0], "B": [1, 1, 1, 1], "C": [0, 1, 0.5, 1], "D": [0.5, 0.5], "E": [0.25]}
    groups1 = {"A": [0, 0.2], "B": [1, 1]}
    records = []
    for step, groups in ((0, groups0), (1, groups1)):
        for ex, rewards in groups.items():
            for i, r in enumerate(rewards):
                records.append(rollout(ex, reward=float(r), step=step, sample_index=i, uid=f"{step}-{ex}-{i}", turns=2,
                                       cost=0.01, num_turns=2 + step))
    # An eval rollout (no step) must not count.
    records.append(rollout("A", reward=1.0, step=None, uid="eval-1"))
    rollouts_ingest(run=run, rollouts=records)

    h = grpo_health(run=run)
    assert h.step == [0, 1]
    assert h.rollouts == [15, 4]
    assert h.groups == [5, 2]
    # Step 0: A all-fail, B all-pass, D dead at 0.5 (neither); C has variance; E is a singleton.
    assert h.frac_dead == [pytest.approx(3 / 5), pytest.approx(1 / 2)]
    assert h.frac_all_fail == [pytest.approx(1 / 5), 0.0]
    assert h.frac_all_pass == [pytest.approx(1 / 5), pytest.approx(1 / 2)]
    step0 = [r for g in groups0.values() for r in g]
    for name, q in (("p10", 10), ("p25", 25), ("p50", 50), ("p75", 75), ("p90", 90)):
        assert getattr(h, name)[0] == pytest.approx(float(np.percentile(step0, q))), name
    assert h.mean[0] == pytest.approx(float(np.mean(step0)))
    assert h.std[0] == pytest.approx(float(np.std(step0)))
    assert h.turns == [pytest.approx(2.0), pytest.approx(3.0)]
    assert h.cost == [pytest.approx(0.15), pytest.approx(0.04)]
    assert h.input_tokens == [pytest.approx(1000.0), pytest.approx(1000.0)]


def test_all_fail_uses_the_runs_lowest_reward_when_rewards_are_negative(team: Any) -> None:
    from deeprepo_web.explorer.health import grpo_health
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="negative")
    rollouts_ingest(run=run, rollouts=[
        rollout("A", reward=-1.0, step=3, uid="a1"), rollout("A", reward=-1.0, step=3, uid="a2"),
        rollout("B", reward=2.0, step=3, uid="b1"), rollout("B", reward=2.0, step=3, uid="b2"),
        rollout("C", reward=-1.0, step=3, uid="c1"), rollout("C", reward=2.0, step=3, uid="c2"),
    ])
    h = grpo_health(run=run)
    assert h.step == [3]
    assert h.frac_all_fail == [pytest.approx(1 / 3)] and h.frac_all_pass == [pytest.approx(1 / 3)]


def test_run_without_rollouts_is_empty_and_the_query_is_bounded(team: Any) -> None:
    from deeprepo_web.explorer.health import grpo_health
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="empty")
    assert grpo_health(run=run).step == []
    rollouts_ingest(run=run, rollouts=[rollout("A", reward=0.5, step=s, uid=f"s{s}") for s in range(10)])
    assert grpo_health(run=run, max_steps=4).step == [6, 7, 8, 9]
