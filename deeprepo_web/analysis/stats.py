"""Descriptive statistics, bootstrap confidence intervals and the unbiased pass@k estimator.

Everything here is plain numpy on lists of floats, so the compare page, the Markdown export and
the tests all compute the same numbers. Resampling is vectorized and chunked: 10k resamples of
1,000 values stay well below 100 ms without allocating one 10k x 1k matrix at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# A statistic maps a (resamples, n) matrix to one value per row (axis=1).
RowStat = Callable[..., np.ndarray]

# Rows of indices drawn per chunk: bounds peak memory (~10 bytes a cell; small chunks stay in cache).
_CHUNK_CELLS = 500_000
MIN_N = 3


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    return arr[~np.isnan(arr)]


def mean(values: Sequence[float] | np.ndarray) -> float:
    arr = _as_array(values)
    return float(arr.mean()) if arr.size else math.nan


def std(values: Sequence[float] | np.ndarray, ddof: int = 0) -> float:
    """Standard deviation; ddof=0 (population) by default, as vf-eval / prime reports print it."""
    arr = _as_array(values)
    if arr.size - ddof <= 0:
        return math.nan
    return float(arr.std(ddof=ddof))


@dataclass(frozen=True)
class Interval:
    estimate: float
    lo: float
    hi: float
    n: int

    @property
    def defined(self) -> bool:
        return not (math.isnan(self.estimate) or math.isnan(self.lo) or math.isnan(self.hi))


def _draw(rng: np.random.Generator, n: int, rows: int) -> np.ndarray:
    """A (rows, n) matrix of indices in [0, n); the narrowest integer type is several times faster."""
    dtype = np.uint16 if n <= 65_535 else (np.uint32 if n <= 4_294_967_295 else np.int64)
    return rng.integers(0, n, size=(rows, n), dtype=dtype)


def _row_stat(
    values: np.ndarray, stat: RowStat, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """`stat` of n_resamples bootstrap resamples of `values`, computed chunk by chunk."""
    n = values.size
    out = np.empty(n_resamples, dtype=float)
    rows = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = _draw(rng, n, stop - start)
        out[start:stop] = np.asarray(stat(values[idx], axis=1), dtype=float)
    return out


def _percentiles(samples: np.ndarray, alpha: float) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    # If many resamples are undefined (e.g. a zero baseline for a relative delta) the
    # interval would describe a biased subset, so call it undefined instead.
    if finite.size < 0.99 * samples.size or finite.size == 0:
        return math.nan, math.nan
    lo, hi = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    stat: RowStat = np.mean,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> Interval:
    """Percentile bootstrap interval of `stat` (any numpy reducer accepting axis=1)."""
    arr = _as_array(values)
    if arr.size == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    estimate = float(stat(arr[None, :], axis=1)[0])
    samples = _row_stat(arr, stat, n_resamples, rng)
    lo, hi = _percentiles(samples, alpha)
    return Interval(estimate, lo, hi, int(arr.size))


@dataclass(frozen=True)
class DiffResult:
    """b minus a, absolute and relative to |a|, with percentile bootstrap intervals."""

    estimate: float  # mean(b) - mean(a)
    lo: float
    hi: float
    rel_estimate: float  # (mean(b) - mean(a)) / |mean(a)|; nan when mean(a) == 0
    rel_lo: float
    rel_hi: float
    n: int  # shared examples when paired, else min(n_a, n_b)
    n_a: int
    n_b: int
    paired: bool
    too_small: bool
    message: str
    alpha: float = 0.05

    @property
    def absolute(self) -> Interval:
        return Interval(self.estimate, self.lo, self.hi, self.n)

    @property
    def relative(self) -> Interval:
        return Interval(self.rel_estimate, self.rel_lo, self.rel_hi, self.n)


def _per_key_means(values: np.ndarray, keys: Sequence[str]) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for key, value in zip(keys, values, strict=True):
        if math.isnan(value):
            continue
        sums[key] = sums.get(key, 0.0) + float(value)
        counts[key] = counts.get(key, 0) + 1
    return {key: sums[key] / counts[key] for key in sums}


def _relative(diff: np.ndarray, base: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(base)
    rel[base == 0] = np.nan
    return rel


def bootstrap_diff(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    paired_keys_a: Sequence[str] | None = None,
    paired_keys_b: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    alpha: float = 0.05,
    seed: int | None = 0,
) -> DiffResult:
    """Bootstrap the change from run a to run b.

    With example keys for both sides and at least MIN_N examples in common, the examples are
    the resampling unit: each run is reduced to its per-example mean and the same resampled
    examples are used on both sides, which removes the between-example variance that both runs
    share (the usual case: two checkpoints evaluated on one eval set). Otherwise each side is
    resampled independently over its rollouts.
    """
    arr_a = np.asarray(a, dtype=float).ravel()
    arr_b = np.asarray(b, dtype=float).ravel()
    rng = np.random.default_rng(seed)

    if paired_keys_a is not None and paired_keys_b is not None:
        if len(paired_keys_a) != arr_a.size or len(paired_keys_b) != arr_b.size:
            raise ValueError("paired keys must have one key per value")
        means_a = _per_key_means(arr_a, paired_keys_a)
        means_b = _per_key_means(arr_b, paired_keys_b)
        shared = sorted(set(means_a) & set(means_b))
        if len(shared) >= MIN_N:
            return _paired(shared, means_a, means_b, n_resamples, alpha, rng)

    arr_a = arr_a[~np.isnan(arr_a)]
    arr_b = arr_b[~np.isnan(arr_b)]
    n_a, n_b = int(arr_a.size), int(arr_b.size)
    if min(n_a, n_b) == 0:
        return DiffResult(
            math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, 0, n_a, n_b,
            False, True, "no values on one side", alpha,
        )
    mean_a, mean_b = float(arr_a.mean()), float(arr_b.mean())
    boot_a = _row_stat(arr_a, np.mean, n_resamples, rng)
    boot_b = _row_stat(arr_b, np.mean, n_resamples, rng)
    return _result(mean_a, mean_b, boot_a, boot_b, min(n_a, n_b), n_a, n_b, False, alpha)


def _paired(
    shared: list[str],
    means_a: dict[str, float],
    means_b: dict[str, float],
    n_resamples: int,
    alpha: float,
    rng: np.random.Generator,
) -> DiffResult:
    ex_a = np.array([means_a[k] for k in shared])
    ex_b = np.array([means_b[k] for k in shared])
    n = len(shared)
    boot_a = np.empty(n_resamples)
    boot_b = np.empty(n_resamples)
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        idx = _draw(rng, n, stop - start)
        boot_a[start:stop] = ex_a[idx].mean(axis=1)
        boot_b[start:stop] = ex_b[idx].mean(axis=1)
    return _result(float(ex_a.mean()), float(ex_b.mean()), boot_a, boot_b, n, n, n, True, alpha)


def _result(
    mean_a: float,
    mean_b: float,
    boot_a: np.ndarray,
    boot_b: np.ndarray,
    n: int,
    n_a: int,
    n_b: int,
    paired: bool,
    alpha: float,
) -> DiffResult:
    diff = boot_b - boot_a
    lo, hi = _percentiles(diff, alpha)
    estimate = mean_b - mean_a
    if mean_a == 0:
        rel_estimate, rel_lo, rel_hi = math.nan, math.nan, math.nan
    else:
        rel_estimate = estimate / abs(mean_a)
        rel_lo, rel_hi = _percentiles(_relative(diff, boot_a), alpha)

    unit = "examples" if paired else "rollouts"
    notes: list[str] = []
    too_small = False
    if paired and n < MIN_N:
        too_small = True
        notes.append(f"only {n} shared examples; need at least {MIN_N}")
    if not paired and min(n_a, n_b) < MIN_N:
        too_small = True
        notes.append(f"only {min(n_a, n_b)} rollouts on one side; need at least {MIN_N}")
    if math.isnan(lo) or math.isnan(hi):
        too_small = True
        notes.append("the confidence interval is undefined")
    elif lo == hi:
        # Every resample gave the same difference: the data carry no spread to bound.
        too_small = True
        notes.append("no variation in the resamples; the interval is degenerate")
    if math.isnan(rel_estimate):
        notes.append("relative change undefined: the baseline mean is 0")
    if too_small:
        message = "Too few data for a confidence interval: " + "; ".join(notes) + "."
    else:
        level = round(100 * (1 - alpha))
        message = (
            f"{'Paired' if paired else 'Independent'} bootstrap over {n} {unit}: "
            f"{estimate:+.3f} ({level}% CI {lo:+.3f} to {hi:+.3f})"
        )
        if not math.isnan(rel_estimate):
            message += f", {100 * rel_estimate:+.1f}% relative"
        if lo > 0 or hi < 0:
            message += "; the interval excludes 0."
        else:
            message += "; the interval includes 0."
        if notes:
            message += " " + "; ".join(notes) + "."
    return DiffResult(
        estimate, lo, hi, rel_estimate, rel_lo, rel_hi, n, n_a, n_b, paired, too_small, message, alpha
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: 1 - C(n-c, k) / C(n, k), computed as a stable running product.

    n samples were drawn for one problem, c of them correct; the chance that at least one of k
    samples drawn without replacement from those n is correct.
    """
    if n < 0 or c < 0 or k < 1 or c > n:
        raise ValueError(f"invalid pass@k arguments n={n} c={c} k={k}")
    if k > n:
        raise ValueError(f"k={k} exceeds the number of samples n={n}")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
    terms = 1.0 - k / np.arange(n - c + 1, n + 1, dtype=float)
    return float(1.0 - np.prod(terms))
