from __future__ import annotations

import math

import pytest

from deeprepo_web.analysis.grpo import DeadRule, group_advantages, group_stats


def test_advantages_known_group() -> None:
    adv = group_advantages([1.0, 0.0, 0.0, 1.0])
    assert adv.tolist() == [1.0, -1.0, -1.0, 1.0]
    raw = group_advantages([0.2, 0.4, 0.9], normalize=False)
    assert raw == pytest.approx([-0.3, -0.1, 0.4])
    # Zero variance: the centred rewards (all 0), never a division by 0.
    assert group_advantages([0.7, 0.7, 0.7]).tolist() == [0.0, 0.0, 0.0]


def test_dead_kinds() -> None:
    assert DeadRule().kind([0.0, 0.0]) == "all_fail"
    assert DeadRule().kind([1.0, 1.0, 1.0]) == "all_pass"
    assert DeadRule().kind([0.5, 0.5]) == "other"
    assert DeadRule().kind([0.5, 0.6]) is None
    assert DeadRule(pass_at=0.9).kind([0.9, 0.9]) == "all_pass"


def test_dead_rule_for_a_runs_rewards() -> None:
    rule = DeadRule.for_rewards(-5.0, 5.0)
    assert [rule.kind([v, v]) for v in (-5.0, -2.0, 0.0, 0.5, 2.0, 5.0)] == [
        "all_fail", "all_fail", "all_fail", "other", "other", "all_pass"]
    assert DeadRule.for_rewards(2.0, 10.0).kind([2.0, 2.0]) == "all_fail"
    assert DeadRule.for_rewards(0.0, 0.0).kind([0.0, 0.0]) == "all_fail"  # nothing passed: fail wins
    assert DeadRule.for_rewards(None, None) == DeadRule(0.0, 1.0)


def _rollouts(groups: dict[str, list[float]]) -> list[dict]:
    return [{"example_key": key, "reward": r} for key, rewards in groups.items() for r in rewards]


def test_group_stats() -> None:
    rollouts = _rollouts({
        "a": [0.0, 0.0, 0.0, 0.0],
        "b": [1.0, 1.0, 1.0, 1.0],
        "c": [0.0, 1.0, 0.5, 0.5],
        "d": [0.3, 0.3, 0.3, 0.3],
    })
    rollouts.append({"example_key": "c", "reward": None})  # unscored rollouts are skipped
    groups = {g.example_key: g for g in group_stats(rollouts)}
    assert groups["a"].dead == "all_fail"
    assert groups["b"].dead == "all_pass"
    assert groups["d"].dead == "other"
    c = groups["c"]
    assert c.dead is None and c.size == 4
    assert c.mean == 0.5
    assert c.std == pytest.approx(math.sqrt(0.125))
    assert c.advantages == pytest.approx([-0.5 / c.std, 0.5 / c.std, 0.0, 0.0])
    assert c.indices == [8, 9, 10, 11]

