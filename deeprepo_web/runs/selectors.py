"""Reads for runs. Pages cost what they show: every query here is bounded by its page or bucket count."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.models import MetricSeries, Rollout, Run, Turn
from deeprepo_web.runs.services import ROLLUP_WIDTHS

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
        }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def series_downsampled(*, run: Run, key: str, buckets: int = 1000) -> Series | None:
    """Per-bucket min / max / last for at most `buckets` buckets (spikes survive in min/max).

    Reads raw points when there are few; otherwise the finest precomputed rollup level with at
    most 4x the wanted buckets, merged down. Cost is bounded by the bucket count, not the points.
    """
    buckets = max(1, min(buckets, MAX_BUCKETS))
    series = MetricSeries.objects.filter(run=run, key=key).first()
    if series is None:
        return None
    out = Series(key=key, count=series.count)
    if series.count == 0 or series.first_step is None or series.last_step is None:
        return out
    span = series.last_step - series.first_step + 1
    width = max(1, math.ceil(span / buckets))
    with connection.cursor() as cur:
        if series.count <= buckets:
            cur.execute(
                "SELECT step, value, value, value, time FROM runs_metric WHERE series_id = %s ORDER BY step",
                [series.pk],
            )
            rows = cur.fetchall()
            width = 1
        else:
            level = 0
            for i, w in enumerate(ROLLUP_WIDTHS):
                if span / w <= 4 * buckets:
                    level = i
                    break
            else:
                level = len(ROLLUP_WIDTHS) - 1
            width = max(width, ROLLUP_WIDTHS[level])
            cur.execute(
                "SELECT last_step, min_value, max_value, last_value, last_time FROM runs_metricrollup "
                "WHERE series_id = %s AND level = %s ORDER BY bucket",
                [series.pk, level],
            )
            rows = cur.fetchall()
    out.resolution = width
    current: int | None = None
    for step, lo, hi, last, time_ in rows:
        b = (step - series.first_step) // width
        lo, hi, last = _finite(lo), _finite(hi), _finite(last)
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
    return out


def rollout_page(
    *, run: Run, page: int = 1, per_page: int = 50, order: str = "id", filters: dict[str, Any] | None = None
) -> tuple[list[Rollout], bool]:
    """One page of a run's rollouts and whether there is a next one (no COUNT over the table)."""
    allowed = {"id", "-id", "reward", "-reward", "num_turns", "-num_turns", "output_tokens", "-output_tokens",
               "step", "-step"}
    if order not in allowed:
        order = "id"
    qs = Rollout.objects.filter(run=run, **(filters or {})).select_related("example").order_by(order, "id")
    start = (max(page, 1) - 1) * per_page
    rows = list(qs[start : start + per_page + 1])
    return rows[:per_page], len(rows) > per_page


def turns_page(*, rollout: Rollout, start: int = 0, limit: int = 50) -> list[Turn]:
    turns = list(
        Turn.objects.filter(rollout=rollout, index__gte=start, index__lt=start + limit)
        .order_by("index")
        .prefetch_related("tool_calls")
    )
    return turns


OUTLIER_SCAN = 20_000


def turn_outlier_ids(run: Run, *, step: int | None = None) -> set[int]:
    """Ids of the run's over-long rollouts (turns above Q3 + 1.5 IQR of the run, or of one step).

    Relative to the run, so computed at read time; reads two integer columns of at most
    OUTLIER_SCAN rollouts. For the rollouts table's badge.
    """
    from deeprepo_web.analysis.behaviour import turn_outliers

    qs = Rollout.objects.filter(run=run)
    if step is not None:
        qs = qs.filter(step=step)
    rows = list(qs.order_by("id").values_list("id", "num_turns")[:OUTLIER_SCAN])
    return {rows[i][0] for i in turn_outliers([t for _, t in rows])}
