"""GRPO group statistics: per-example groups, advantages and dead groups.

GRPO learns only from differences inside a group (the rollouts of one example at one step).
A group whose rewards are all equal contributes zero advantage, i.e. no gradient: the share of
such "dead" groups, split into all-fail and all-pass, is the first health signal of a run.
Rollouts are plain mappings with at least `example_key` and `reward` (RolloutRecord shape).
A run's health per step is computed in SQL over its rollouts (`explorer/health.py`, one query for
every step) with the same `DeadRule`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

DeadKind = Literal["all_fail", "all_pass", "other"]
_TOL = 1e-9


def group_advantages(rewards: Sequence[float] | np.ndarray, *, normalize: bool = True) -> np.ndarray:
    """reward - group mean, divided by the group std (ddof=0) when it is > 0."""
    arr = np.asarray(rewards, dtype=float)
    if arr.size == 0:
        return arr
    # Equal rewards can leave a ~1e-17 std from rounding; dividing by it would blow 0 up to +-1.
    if float(arr.max() - arr.min()) <= _TOL:
        return np.zeros_like(arr)
    centered = arr - arr.mean()
    sd = float(arr.std())
    return centered / sd if normalize else centered


@dataclass(frozen=True)
class DeadRule:
    """The one definition of a dead group's kind, used by the run page's GRPO health (its SQL takes
    these thresholds) and by the Groups tab. A group is dead when its rewards are all equal (within
    `tol`); then it is all-fail when the common reward is <= `fail_at`, else all-pass when it is
    >= `pass_at`, else other. `for_rewards` places them for a run's own rewards."""

    fail_at: float = 0.0
    pass_at: float = 1.0
    tol: float = _TOL

    @classmethod
    def for_rewards(cls, lo: float | None, hi: float | None) -> DeadRule:
        """For a run whose rewards span [lo, hi]: fail at 0 or at the lowest reward, whichever is
        higher (a run scored in [-5, 5] fails at -5 and at 0 alike, one scored in [2, 10] at 2),
        pass at the highest reward. Without rewards: 0 and 1."""
        if lo is None or hi is None:
            return cls()
        return cls(fail_at=max(0.0, lo), pass_at=hi)

    def kind(self, rewards: Sequence[float] | np.ndarray) -> DeadKind | None:
        """None when the group has variance, else which kind of zero-variance group it is."""
        arr = np.asarray(rewards, dtype=float)
        if arr.size == 0 or float(arr.max() - arr.min()) > self.tol:
            return None
        value = float(arr[0])
        if value <= self.fail_at + self.tol:
            return "all_fail"
        if value >= self.pass_at - self.tol:
            return "all_pass"
        return "other"


@dataclass(frozen=True)
class GroupStats:
    example_key: str
    rewards: list[float]
    mean: float
    std: float
    advantages: list[float]
    dead: DeadKind | None  # None: the group has variance and carries a learning signal
    indices: list[int] = field(default_factory=list)  # positions in the input sequence

    @property
    def size(self) -> int:
        return len(self.rewards)


def _reward(rollout: Mapping[str, Any]) -> float | None:
    value = rollout.get("reward")
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def group_stats(
    rollouts: Iterable[Mapping[str, Any]],
    *,
    rule: DeadRule = DeadRule(),  # noqa: B008  (frozen: one shared default is safe)
    normalize: bool = True,
) -> list[GroupStats]:
    """One GroupStats per example key, in first-seen order; rollouts without a reward are skipped."""
    rewards: dict[str, list[float]] = {}
    positions: dict[str, list[int]] = {}
    for i, rollout in enumerate(rollouts):
        value = _reward(rollout)
        if value is None:
            continue
        key = str(rollout.get("example_key"))
        rewards.setdefault(key, []).append(value)
        positions.setdefault(key, []).append(i)
    out = []
    for key, values in rewards.items():
        arr = np.asarray(values)
        out.append(
            GroupStats(
                example_key=key,
                rewards=values,
                mean=float(arr.mean()),
                std=float(arr.std()),
                advantages=[float(a) for a in group_advantages(arr, normalize=normalize)],
                dead=rule.kind(arr),
                indices=positions[key],
            )
        )
    return out
