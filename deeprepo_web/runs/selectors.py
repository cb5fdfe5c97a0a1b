"""Reads for runs: the run list and metric series, downsampled from the rollups (bounded by the bucket count)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from deeprepo_web.accounts.models import Project
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.ingest.metrics import ROLLUP_WIDTHS
from deeprepo_web.runs.models import MetricSeries, Run

MAX_BUCKETS = 2000


def run_list(*, project: Project) -> QuerySet[Run]:
    return Run.objects.filter(project=project).order_by("-created_at")


def series_keys(*, run: Run) -> list[str]:
    return list(MetricSeries.objects.filter(run=run).order_by("key").values_list("key", flat=True))


@dataclass
class Series:
    key: str
    steps: list[int] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)
    last: list[float | None] = field(default_factory=list)
    min: list[float | None] = field(default_factory=list)
    max: list[float | None] = field(default_factory=list)
    count: int = 0
    resolution: int = 1  # steps per bucket actually used
    start: int | None = None  # the range read (the whole series unless zoomed)
    end: int | None = None
    nonfinite: list[list[Any]] = field(default_factory=list)  # [step, "NaN" | "+Inf" | "-Inf"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "count": self.count,
            "resolution": self.resolution,
            "step": self.steps,
            "time": self.times,
            "value": self.last,
            "min": self.min,
            "max": self.max,
            "start": self.start,
            "end": self.end,
            "nonfinite": self.nonfinite,
        }


# The run's lowest and highest finite reward: both ends of the (run, reward) index. A query of its
# own (reward_bounds) or a subquery of a bigger one (the GRPO health's cache key).
REWARD_BOUNDS_SQL = ("SELECT min(reward), max(reward) FROM runs_rollout WHERE run_id = %(run)s "
                     "AND reward > '-Infinity'::float8 AND reward < 'Infinity'::float8")


def reward_bounds(*, run: Run) -> tuple[float | None, float | None]:
    """The run's lowest and highest finite reward, or Nones."""
    with read_cursor() as cur:
        cur.execute(REWARD_BOUNDS_SQL, {"run": run.pk})
        lo, hi = cur.fetchone()
    return lo, hi


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def series_downsampled(*, run: Run, key: str, buckets: int = 1000,
                       start: int | None = None, end: int | None = None) -> Series | None:
    """Per-bucket min / max / last for at most `buckets` buckets of steps [start, end] (spikes
    survive in min/max; NaN and ±Infinity are left out of them and listed in `nonfinite`).

    A zoomed chart asks for its visible range and gets finer buckets, down to the raw points.
    Reads raw points when the range holds few or is narrower than the finest rollup; otherwise
    the finest precomputed rollup level with at most 8x the wanted buckets, merged down. Cost is
    bounded by the bucket count, not the points.
    """
    buckets = max(1, min(buckets, MAX_BUCKETS))
    series = MetricSeries.objects.filter(run=run, key=key).first()
    if series is None:
        return None
    out = Series(key=key, count=series.count)
    if series.count == 0 or series.first_step is None or series.last_step is None:
        return out
    lo = series.first_step if start is None else max(start, series.first_step)
    hi = series.last_step if end is None else min(end, series.last_step)
    out.start, out.end = lo, hi
    if hi < lo:
        return out
    span = hi - lo + 1
    width = max(1, math.ceil(span / buckets))
    whole = lo == series.first_step and hi == series.last_step
    with read_cursor() as cur:
        if (whole and series.count <= buckets) or width < ROLLUP_WIDTHS[0]:
            origin = lo
            width = 1 if whole and series.count <= buckets else width
            cur.execute(_RAW_BUCKETS, [series.pk, lo, hi, origin, width])
        else:
            level = next((i for i, w in enumerate(ROLLUP_WIDTHS) if span / w <= 8 * buckets), len(ROLLUP_WIDTHS) - 1)
            # A whole number of rollup buckets per output bucket, so every bucket is exact.
            w = ROLLUP_WIDTHS[level]
            width = math.ceil(width / w) * w
            origin = lo - lo % w
            # Merge the rollup buckets down to the wanted width in Postgres: half the rows cross the wire.
            cur.execute(_ROLLUP_BUCKETS, [series.pk, level, lo // w, hi // w, origin, width])
        rows = cur.fetchall()
        cur.execute(_NONFINITE, [series.pk, lo, hi, MAX_NONFINITE])
        out.nonfinite = [[step, _nonfinite_name(v)] for step, v in cur.fetchall()]
    out.resolution = width
    _fold_rows(out, rows, origin, width)
    return out


# Raw points of a range, bucketed in SQL; NaN and ±Infinity stay out of min / max as in the rollups.
_FINITE = "value NOT IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)"
_RAW_BUCKETS = (
    "SELECT max(step), min(value) FILTER (WHERE " + _FINITE + "), max(value) FILTER (WHERE " + _FINITE + "), "
    "(array_agg(value ORDER BY step DESC))[1], (array_agg(time ORDER BY step DESC))[1] "
    "FROM runs_metric WHERE series_id = %s AND step BETWEEN %s AND %s GROUP BY (step - %s) / %s ORDER BY 1"
)
_ROLLUP_BUCKETS = (
    "SELECT max(last_step), min(min_value), max(max_value), "
    "(array_agg(last_value ORDER BY last_step DESC))[1], (array_agg(last_time ORDER BY last_step DESC))[1] "
    "FROM runs_metricrollup WHERE series_id = %s AND level = %s AND bucket BETWEEN %s AND %s "
    "GROUP BY (last_step - %s) / %s ORDER BY 1"
)
# Served by the partial index runs_metric_nonfinite (migration 0008): only such points are read.
MAX_NONFINITE = 500
_NONFINITE = (
    "SELECT step, value FROM runs_metric WHERE series_id = %s AND step BETWEEN %s AND %s "
    "AND value IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8) ORDER BY step LIMIT %s"
)


def _nonfinite_name(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def _fold_rows(out: Series, rows: list[tuple[Any, ...]], origin: int, width: int) -> None:
    current: int | None = None
    for step, lo, hi, last, time_ in rows:
        b = (step - origin) // width
        lo, hi, last = finite_or_none(lo), finite_or_none(hi), finite_or_none(last)
        if b != current:
            current = b
            out.steps.append(step)
            out.times.append(time_)
            out.last.append(last)
            out.min.append(lo)
            out.max.append(hi)
            continue
        out.steps[-1], out.times[-1], out.last[-1] = step, time_, last
        if lo is not None:
            out.min[-1] = lo if out.min[-1] is None else min(out.min[-1], lo)
        if hi is not None:
            out.max[-1] = hi if out.max[-1] is None else max(out.max[-1], hi)


# A bucket the hover asks about: at 100 buckets of a 10^7-step series, 10^5 steps (a few ms of PK scan).
MAX_EXTREMES_SPAN = 100_000


def series_extremes(*, run: Run, key: str, start: int, end: int) -> dict[str, Any] | None:
    """The steps of the lowest and highest finite value in steps [start, end]: what a chart's
    hover names for a bucket. Reads the raw points of that one bucket (a PK range scan)."""
    series = MetricSeries.objects.filter(run=run, key=key).first()
    if series is None:
        return None
    out: dict[str, Any] = {"key": key, "start": start, "end": end, "min": None, "max": None}
    with read_cursor() as cur:
        for name, order in (("min", "ASC"), ("max", "DESC")):
            cur.execute(
                "SELECT step, value FROM runs_metric WHERE series_id = %s AND step BETWEEN %s AND %s AND "
                + _FINITE + f" ORDER BY value {order}, step LIMIT 1",
                [series.pk, start, end],
            )
            row = cur.fetchone()
            if row:
                out[name] = {"step": row[0], "value": row[1]}
    return out


# A live chart asks for what came after its last step; a page that fell further behind than this
# reloads the downsampled series instead of receiving every raw point.
AFTER_MAX_POINTS = 2000


def series_after(*, run: Run, after: int, key: str | None = None,
                 limit: int = AFTER_MAX_POINTS) -> dict[str, Any]:
    """Raw points with step > `after` of one key (or of every key): what a live chart appends.

    Bounded by `limit` points per key; `truncated` names the keys that had more (their chart
    reloads the downsampled series). Series whose last step is not past `after` are not read.
    """
    limit = max(1, min(limit, AFTER_MAX_POINTS))
    series = MetricSeries.objects.filter(run=run, last_step__gt=after)
    if key is not None:
        series = series.filter(key=key)
    ids = dict(series.values_list("id", "key")[:2000])
    out: dict[str, Any] = {"after": after, "points": {}, "truncated": []}
    if not ids:
        return out
    with read_cursor() as cur:
        # Per series the (series_id, step) primary key gives the newest points in order.
        cur.execute(
            "SELECT m.series_id, m.step, m.value, m.time FROM unnest(%s::bigint[]) AS s(id) "
            "CROSS JOIN LATERAL (SELECT series_id, step, value, time FROM runs_metric "
            "WHERE series_id = s.id AND step > %s ORDER BY step LIMIT %s) AS m ORDER BY m.series_id, m.step",
            [list(ids), after, limit + 1],
        )
        rows = cur.fetchall()
    for sid, step, value, time_ in rows:
        pts = out["points"].setdefault(ids[sid], {"step": [], "time": [], "value": []})
        if len(pts["step"]) >= limit:
            if ids[sid] not in out["truncated"]:
                out["truncated"].append(ids[sid])
            continue
        pts["step"].append(step)
        pts["time"].append(time_)
        pts["value"].append(finite_or_none(value))
    return out
