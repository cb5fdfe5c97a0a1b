from __future__ import annotations

import math
import time

import numpy as np
import pytest

from deeprepo_web.analysis.stats import bootstrap_ci, bootstrap_diff, mean, pass_at_k, std

# The seed-002 eval report: 3 examples x 2 rollouts; r1 is the first rollout of each example.
UNTRAINED = [0.636, 0.9, 0.85, 0.887, 0.7, 0.738]
TRAINED = [0.962, 1.0, 1.0, 0.962, 1.0, 1.0]
KEYS = ["ex0", "ex1", "ex2", "ex0", "ex1", "ex2"]


def test_seed_002_report_numbers() -> None:
    assert round(mean(UNTRAINED), 3) == 0.785
    assert round(std(UNTRAINED), 3) == 0.100
    assert round(mean(TRAINED), 3) == 0.987
    assert round(std(TRAINED), 3) == 0.018
    turns = [18, 5, 5, 7, 9, 8]
    assert round(mean(turns), 2) == 8.67
    assert round(std(turns), 3) == 4.422
    assert std(turns, ddof=1) > std(turns)


def test_seed_002_relative_improvement() -> None:
    diff = bootstrap_diff(UNTRAINED, TRAINED, paired_keys_a=KEYS, paired_keys_b=KEYS)
    assert diff.paired and diff.n == 3
    assert round(diff.estimate, 3) == 0.202
    assert round(100 * diff.rel_estimate, 1) == 25.7
    assert diff.lo > 0 and diff.lo <= diff.estimate <= diff.hi
    assert not diff.too_small
    assert "+25.7%" in diff.message


def test_nan_and_empty_inputs() -> None:
    assert math.isnan(mean([]))
    assert math.isnan(std([1.0], ddof=1))
    assert mean([1.0, float("nan"), 3.0]) == 2.0
    ci = bootstrap_ci([])
    assert ci.n == 0 and not ci.defined


def test_bootstrap_ci_covers_true_mean_and_is_stable() -> None:
    data = np.random.default_rng(123).normal(loc=2.0, scale=1.0, size=400)
    ci = bootstrap_ci(data, seed=7)
    assert ci.lo < 2.0 < ci.hi
    assert ci.lo < ci.estimate < ci.hi
    # The percentile interval of a mean is close to the normal one: +-1.96 sd/sqrt(n).
    half = 1.96 * data.std(ddof=1) / math.sqrt(data.size)
    assert (ci.hi - ci.lo) == pytest.approx(2 * half, rel=0.1)
    again = bootstrap_ci(data, seed=7)
    assert (again.lo, again.hi) == (ci.lo, ci.hi)


def test_bootstrap_ci_other_statistic() -> None:
    data = np.arange(101, dtype=float)
    ci = bootstrap_ci(data, stat=np.median, n_resamples=2000, seed=1)
    assert ci.estimate == 50.0
    assert ci.lo < 50.0 < ci.hi


def test_bootstrap_coverage_of_normal_data() -> None:
    # Over many independent samples the 95% interval should cover the true mean ~95% of the time.
    rng = np.random.default_rng(0)
    hits = 0
    trials = 200
    for i in range(trials):
        data = rng.normal(loc=0.5, scale=0.2, size=60)
        ci = bootstrap_ci(data, n_resamples=2000, seed=i)
        hits += ci.lo <= 0.5 <= ci.hi
    assert 0.88 <= hits / trials <= 0.99


def test_paired_is_narrower_on_correlated_data() -> None:
    rng = np.random.default_rng(5)
    difficulty = rng.uniform(0.1, 0.9, size=50)  # shared between both runs
    a = np.repeat(difficulty, 4) + rng.normal(0, 0.03, size=200)
    b = np.repeat(difficulty, 4) + 0.03 + rng.normal(0, 0.03, size=200)
    keys = [f"ex{i}" for i in range(50) for _ in range(4)]
    paired = bootstrap_diff(a, b, paired_keys_a=keys, paired_keys_b=keys, seed=3)
    unpaired = bootstrap_diff(a, b, seed=3)
    assert paired.paired and not unpaired.paired
    assert paired.n == 50 and unpaired.n == 200
    assert (paired.hi - paired.lo) < 0.5 * (unpaired.hi - unpaired.lo)
    assert paired.lo > 0  # the paired test sees the +0.03 the unpaired one cannot resolve
    assert unpaired.lo < 0 < unpaired.hi
    assert paired.estimate == pytest.approx(0.03, abs=0.01)


def test_paired_needs_shared_examples() -> None:
    # Disjoint keys: falls back to independent resampling of rollouts.
    diff = bootstrap_diff([0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8],
                          paired_keys_a=["a", "b", "c", "d"], paired_keys_b=["e", "f", "g", "h"])
    assert not diff.paired
    assert diff.estimate == pytest.approx(0.4)
    with pytest.raises(ValueError):
        bootstrap_diff([1.0, 2.0], [1.0, 2.0], paired_keys_a=["a"], paired_keys_b=["a", "b"])


def test_too_small_and_zero_baseline() -> None:
    small = bootstrap_diff([0.5, 0.6], [0.7, 0.8])
    assert small.too_small
    assert "need at least 3" in small.message
    zero = bootstrap_diff([0.0, 0.0, 0.0, 0.0], [0.5, 0.6, 0.4, 0.5])
    assert math.isnan(zero.rel_estimate)
    assert "baseline mean is 0" in zero.message
    constant = bootstrap_diff([1.0] * 5, [1.0] * 5)
    assert constant.too_small and constant.estimate == 0.0


def test_bootstrap_speed() -> None:
    data = np.random.default_rng(0).normal(size=1000)
    bootstrap_ci(data)  # warm up allocations
    start = time.perf_counter()
    bootstrap_ci(data, n_resamples=10_000)
    elapsed = time.perf_counter() - start
    # The target is well under 100 ms on a developer laptop; allow slack for a loaded CI host.
    assert elapsed < 0.25, elapsed


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),  # pass@1 is c/n
        (5, 0, 2, 0.0),
        (5, 4, 2, 1.0),  # only one failure: any 2 samples include a success
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (10, 2, 3, 1 - 56 / 120),  # 1 - C(8,3)/C(10,3)
        (200, 13, 10, 1 - math.comb(187, 10) / math.comb(200, 10)),
    ],
)
def test_pass_at_k(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_invalid() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 5)
