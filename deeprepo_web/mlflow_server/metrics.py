"""Metrics: MLflow's (key, value, timestamp, step) rows into the runs ingest, and their history back.

One value is kept per (key, step), the first that arrived: a re-sent batch (the client retries
after a lost answer) then changes nothing. MLflow keeps every value at one step; a script that
logs without steps logs at step 0 each time, so only its first value is kept here (say steps).
"""

from __future__ import annotations

from typing import Any

from deeprepo_web.mlflow_server.errors import invalid
from deeprepo_web.mlflow_server.wire import integer, number, number_out, text
from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.models import Metric, MetricSeries, Run

MAX_KEY = 500


def points(metrics: Any) -> list[dict[str, Any]]:
    """[{key, value, timestamp, step}] → [{step, time, values}], one value per (key, step): the first."""
    if not isinstance(metrics, list):
        raise invalid("Invalid value for parameter 'metrics': expected a list of metric objects")
    by_step: dict[int, tuple[int, dict[str, float]]] = {}
    for i, m in enumerate(metrics):
        where = f"metrics[{i}]."
        if not isinstance(m, dict):
            raise invalid(f"Invalid value for parameter 'metrics[{i}]': expected an object")
        key = text(m, "key", where=where)
        if len(key) > MAX_KEY:
            raise invalid(f"Invalid value for parameter '{where}key': {len(key)} characters is over {MAX_KEY}")
        if m.get("value") is None:
            raise invalid(f"Missing value for required parameter '{where}value'")
        value = number(m["value"], f"{where}value")
        step = integer(m, "step", 0, where=where) or 0
        stamp = integer(m, "timestamp", 0, where=where) or 0
        by_step.setdefault(step, (stamp, {}))[1].setdefault(key, value)
    return [{"step": step, **({"time": stamp / 1000} if stamp else {}), "values": values}
            for step, (stamp, values) in by_step.items()]


def metrics_log(*, run: Run, metrics: Any) -> int:
    pts = points(metrics)
    if not pts:
        return 0
    new = metrics_ingest(run=run, points=pts)
    run_services.run_touch(run=run)
    return new


def metric_history(*, run: Run, key: str, after: int | None, limit: int) -> tuple[list[dict[str, Any]], int | None]:
    """Points of one key past step `after`, and the step to continue from when there are more."""
    series = MetricSeries.objects.filter(run=run, key=key).first()
    if series is None:
        return [], None
    rows = Metric.objects.filter(series=series)
    if after is not None:
        rows = rows.filter(step__gt=after)
    got = list(rows.order_by("step").values_list("step", "value", "time")[: limit + 1])
    more = got[limit][0] if len(got) > limit else None
    out = [{"key": key, "value": number_out(v), "step": s, "timestamp": int((t or 0) * 1000)} for s, v, t in got[:limit]]
    return out, (got[limit - 1][0] if more is not None else None)
