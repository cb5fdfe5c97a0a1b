"""Defined x-axes: a metric drawn against another metric of the same history row instead of the step
(W&B's `define_metric("eval/*", step_metric="eval_step")`). The definitions are kept per run
(MetricAxis); a chart asks the series endpoint for the x-axis's values at the steps it read."""

from __future__ import annotations

from fnmatch import fnmatchcase

from django.db import transaction

from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import MetricAxis, MetricSeries, Run

MAX_AXES = 500  # definitions kept per run (a glob counts once)


def metric_axes_set(*, run: Run, axes: dict[str, str]) -> int:
    """Keep `axes` ({key or glob: x key}); a key defined again takes its new x-axis. Returns how many."""
    rows = [MetricAxis(run=run, key=k[:500], x_key=x[:500]) for k, x in list(axes.items())[:MAX_AXES]
            if k and x and k != x]
    if not rows:
        return 0
    with transaction.atomic():
        MetricAxis.objects.bulk_create(rows, update_conflicts=True, unique_fields=["run", "key"], update_fields=["x_key"])
    return len(rows)


def metric_axes_for(*, run: Run, keys: list[str]) -> dict[str, str]:
    """{key: x key} for those of `keys` a definition covers (an exact key before a glob)."""
    defined = dict(MetricAxis.objects.filter(run=run).values_list("key", "x_key")[:MAX_AXES])
    if not defined:
        return {}
    globs = [(k, x) for k, x in defined.items() if any(c in k for c in "*?[")]
    out = {}
    for key in keys:
        x = defined.get(key) or next((x for pattern, x in globs if fnmatchcase(key, pattern)), None)
        if x and x != key:
            out[key] = x
    return out


def series_x_values(*, run: Run, x_key: str, steps: list[int]) -> list[float | None] | None:
    """The values of metric `x_key` at `steps` (None where that row did not log it); None when the
    run has no such metric. Bounded by len(steps): one index probe per step."""
    series_id = MetricSeries.objects.filter(run=run, key=x_key).values_list("id", flat=True).first()
    if series_id is None:
        return None
    if not steps:
        return []
    with read_cursor() as cur:
        cur.execute("SELECT step, value FROM runs_metric WHERE series_id = %s AND step = ANY(%s::bigint[])",
                    [series_id, steps])
        at = dict(cur.fetchall())
    return [v if (v := at.get(s)) is not None and v == v and abs(v) != float("inf") else None for s in steps]
