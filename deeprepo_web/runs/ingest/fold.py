"""A metric batch as column arrays, and its rollups and series stats computed from those arrays.

The batch is folded in memory (numpy) so Postgres never rereads raw points: it receives the
points by COPY and, per bucket, one min / max / last row to merge into what it already holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from deeprepo_web.runs.services import IngestError

# Bucket widths (in steps) of the rollup levels; level i groups steps into ROLLUP_WIDTHS[i].
# Factor 16 between levels: 4 levels cover a million steps; readers merge up to 8x the wanted buckets.
ROLLUP_WIDTHS = (16, 256, 4096, 65536)
SHIFTS = tuple(w.bit_length() - 1 for w in ROLLUP_WIDTHS)  # widths are powers of two: buckets by shift
assert all(1 << s == w for s, w in zip(SHIFTS, ROLLUP_WIDTHS, strict=True))


class _Index(dict[str, int]):
    """key -> its position in first-seen order (a miss adds the key)."""

    def __missing__(self, key: str) -> int:
        value = self[key] = len(self)
        return value


@dataclass
class Points:
    """One batch's points, one entry per (key, step), sorted by key then step; repeats dropped."""

    keys: list[str]  # key index -> key
    key: np.ndarray  # int64 key index
    step: np.ndarray  # int64
    value: np.ndarray  # float64 (NaN where null)
    value_null: np.ndarray  # bool
    time: np.ndarray  # float64 (NaN where null)
    time_null: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.step)

    def take(self, mask: np.ndarray) -> Points:
        return Points(self.keys, self.key[mask], self.step[mask], self.value[mask], self.value_null[mask],
                      self.time[mask], self.time_null[mask])


def _floats(values: list[Any], what: str) -> tuple[np.ndarray, np.ndarray]:
    """float64 array and null mask. numpy reads None as NaN: only a batch with NaN looks for None."""
    try:
        arr = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise IngestError(f"{what}: every value must be a number or null") from exc
    if arr.ndim != 1:
        raise IngestError(f"{what}: every value must be a number or null")
    if not np.isnan(arr).any():
        return arr, np.zeros(len(values), dtype=bool)
    return arr, np.fromiter((v is None for v in values), dtype=bool, count=len(values))


MAX_KEY = 500
BAD_KEY = f"metric key must have 1 to {MAX_KEY} characters"


class BadKeys(IngestError):
    """Keys no series can have (empty, or longer than MAX_KEY): raised before anything is written,
    so a caller can store the batch without them (runs/ingest/badkeys.py)."""

    def __init__(self, points: list[dict[str, Any]], keys: list[str]) -> None:
        self.keys = keys
        i = next(i for i, p in enumerate(points) if keys[0] in p["values"])
        super().__init__(f"points[{i}].values: {BAD_KEY}")


def bad_key(name: str) -> bool:
    return not name or len(name) > MAX_KEY


def points_from_batch(points: list[dict[str, Any]]) -> Points:
    """Flatten [{step, time?, values: {key: value}}]; per point, not per value, costs Python work."""
    index = _Index()
    key_pos: list[int] = []
    values: list[Any] = []
    steps: list[int] = []
    times: list[Any] = []
    counts: list[int] = []
    for p in points:
        vals = p["values"]
        if not vals:
            continue
        key_pos.extend(map(index.__getitem__, vals))
        values.extend(vals.values())
        steps.append(p["step"])
        times.append(p.get("time"))
        counts.append(len(vals))
    keys = list(index)
    bad = [name for name in keys if bad_key(name)]
    if bad:
        raise BadKeys(points, bad)
    try:
        step_per_point = np.array(steps, dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise IngestError("points: every step must be a 64-bit integer") from exc
    value, value_null = _floats(values, "points.values")
    time_pp, time_null_pp = _floats(times, "points.time")
    reps = np.array(counts, dtype=np.int64)
    key = np.array(key_pos, dtype=np.int64)
    step = np.repeat(step_per_point, reps)
    order = _key_step_order(key, step)
    key, step = key[order], step[order]
    keep = np.ones(len(step), dtype=bool)
    keep[1:] = (key[1:] != key[:-1]) | (step[1:] != step[:-1])
    if not keep.all():
        order, key, step = order[keep], key[keep], step[keep]
    return Points(keys, key, step, value[order], value_null[order],
                  np.repeat(time_pp, reps)[order], np.repeat(time_null_pp, reps)[order])


def _key_step_order(key: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Positions sorted by (key, step), stable: of repeats of (key, step), the first sent is kept.

    A training loop sends steps in order, so a stable sort by key alone (a radix sort on a small
    integer type) already leaves each key's steps ascending; only other batches pay the full sort.
    """
    if len(key) and key.max() < 65536:
        order = np.argsort(key.astype(np.uint16), kind="stable")
        s = step[order]
        k = key[order]
        if not ((s[1:] < s[:-1]) & (k[1:] == k[:-1])).any():
            return order
    return np.lexsort((step, key))


def _starts(*cols: np.ndarray) -> np.ndarray:
    """Where each run of equal (cols...) begins in sorted arrays."""
    n = len(cols[0])
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    return np.flatnonzero(change)


@dataclass
class Buckets:
    """min / max / last of each (key, bucket) at one level; min/max NaN where no finite value."""

    level: int
    key: np.ndarray
    bucket: np.ndarray
    min: np.ndarray
    max: np.ndarray
    last: np.ndarray
    last_null: np.ndarray
    last_step: np.ndarray
    last_time: np.ndarray
    last_time_null: np.ndarray


def _finite_or_nan(values: np.ndarray) -> np.ndarray:
    # NaN and ±Infinity are kept as points but left out of min/max (fmin/fmax skip NaN).
    return np.where(np.isfinite(values), values, np.nan)


def rollups(pts: Points) -> list[Buckets]:
    """Every rollup level of the batch: level 0 from the points, each next level from the one below."""
    bucket = pts.step >> SHIFTS[0]
    starts = _starts(pts.key, bucket)
    if not len(starts):
        return []
    ends = np.append(starts[1:], len(pts)) - 1
    fv = _finite_or_nan(pts.value)
    level = Buckets(0, pts.key[starts], bucket[starts], np.fmin.reduceat(fv, starts),
                    np.fmax.reduceat(fv, starts), pts.value[ends], pts.value_null[ends], pts.step[ends],
                    pts.time[ends], pts.time_null[ends])
    out = [level]
    for i in range(1, len(SHIFTS)):
        below = out[-1]
        bucket = below.bucket >> (SHIFTS[i] - SHIFTS[i - 1])
        starts = _starts(below.key, bucket)
        ends = np.append(starts[1:], len(bucket)) - 1
        out.append(Buckets(i, below.key[starts], bucket[starts], np.fmin.reduceat(below.min, starts),
                           np.fmax.reduceat(below.max, starts), below.last[ends], below.last_null[ends],
                           below.last_step[ends], below.last_time[ends], below.last_time_null[ends]))
    return out


def _py(arr: np.ndarray, null: np.ndarray | None = None) -> list[Any]:
    """Python values for query parameters: NaN min/max (no finite value) and masked entries -> None."""
    values = arr.tolist()
    if null is None:
        return [None if isinstance(v, float) and math.isnan(v) else v for v in values]
    return [None if n else v for v, n in zip(values, null.tolist(), strict=True)]


def series_stats(pts: Points) -> dict[str, list[Any]]:
    """Per key of the batch: count, first and last step, last value, finite min and max."""
    starts = _starts(pts.key)
    ends = np.append(starts[1:], len(pts)) - 1
    fv = _finite_or_nan(pts.value)
    return {
        "key": pts.key[starts].tolist(),
        "count": np.diff(np.append(starts, len(pts))).tolist(),
        "first": pts.step[starts].tolist(),
        "last": pts.step[ends].tolist(),
        "last_value": _py(pts.value[ends], pts.value_null[ends]),
        "min": _py(np.fmin.reduceat(fv, starts)),
        "max": _py(np.fmax.reduceat(fv, starts)),
    }
