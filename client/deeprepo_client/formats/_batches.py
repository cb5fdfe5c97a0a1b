"""Records into events of bounded size, so no parser holds a whole file's rows at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..records import Event, MetricPoint, MetricsEvent, Problem, RolloutRecord, RolloutsEvent
from ._values import num

ROLLOUT_BATCH = 500
POINT_BATCH = 5000  # metric values (not points) per MetricsEvent, so wide rows stay bounded too

def batch_rollouts(ref: str, items: Iterable[RolloutRecord | Problem], size: int = ROLLOUT_BATCH) -> Iterator[Event]:
    buf: list[RolloutRecord] = []
    for item in items:
        if isinstance(item, Problem):
            yield item
            continue
        buf.append(item)
        if len(buf) >= size:
            yield RolloutsEvent(ref, buf)
            buf = []
    if buf:
        yield RolloutsEvent(ref, buf)


def batch_points(ref: str, items: Iterable[MetricPoint | Problem], size: int = POINT_BATCH) -> Iterator[Event]:
    buf: list[MetricPoint] = []
    count = 0
    for item in items:
        if isinstance(item, Problem):
            yield item
            continue
        buf.append(item)
        count += max(1, len(item["values"]))
        if count >= size:
            yield MetricsEvent(ref, buf)
            buf, count = [], 0
    if buf:
        yield MetricsEvent(ref, buf)


def numeric_values(row: dict[str, Any], skip: Iterable[str] = ()) -> dict[str, float | None]:
    """Every numeric (or null) key of a metrics row, names kept as they are."""
    skipped = set(skip)
    out: dict[str, float | None] = {}
    for k, v in row.items():
        if k in skipped:
            continue
        if v is None:
            out[k] = None
        elif isinstance(v, int | float):
            out[k] = num(v)
    return out
