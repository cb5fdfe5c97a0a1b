"""Records into events of bounded size, so no parser holds a whole file's rows at once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, MetricsEvent, Problem, RolloutRecord, RolloutsEvent
from ._json import iter_jsonl
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


def jsonl_points(path: Path, *, partial_ok: bool, time_key: str,
                 time: Callable[[Any], float | None] = num) -> Iterator[MetricPoint | Problem]:
    """Metric points of a JSON-lines file of `{step, <time_key>, key: number, ...}` rows."""
    for item in iter_jsonl(path, partial_ok=partial_ok):
        if isinstance(item, Problem):
            yield item
            continue
        lineno, row = item
        if not isinstance(row, dict) or num(row.get("step")) is None:
            yield Problem(str(path), lineno, "metrics line without a step")
            continue
        yield {"step": int(row["step"]), "time": time(row.get(time_key)),
               "values": numeric_values(row, skip=("step", time_key))}
