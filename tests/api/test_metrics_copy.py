"""Points go in by COPY and are folded from the batch: overlaps, repeats and nulls stay exact."""

from __future__ import annotations

import math

import pytest

from deeprepo_web.runs.models import Metric, MetricRollup, MetricSeries, Run


def _run(api) -> str:
    return api.post("/runs", {"name": "r"}).json()["id"]


def _rollups_match_raw(run: Run, key: str) -> None:
    """Every stored rollup row equals min / max / last recomputed from the raw points."""
    series = MetricSeries.objects.get(run=run, key=key)
    raw = sorted(Metric.objects.filter(series=series).values_list("step", "value", "time"))
    from deeprepo_web.runs.ingest.metrics import ROLLUP_WIDTHS

    rows = list(MetricRollup.objects.filter(series=series))
    assert rows
    for r in rows:
        width = ROLLUP_WIDTHS[r.level]
        inside = [(s, v, t) for s, v, t in raw if s // width == r.bucket]
        finite = [v for _, v, _ in inside if v is not None and math.isfinite(v)]
        assert r.min_value == (min(finite) if finite else None)
        assert r.max_value == (max(finite) if finite else None)
        assert r.last_step == inside[-1][0] and r.last_time == inside[-1][2]
        assert r.last_value == inside[-1][1] or (math.isnan(r.last_value) and math.isnan(inside[-1][1]))
    levels = {r.level for r in rows}
    assert levels == set(range(len(ROLLUP_WIDTHS)))
    assert series.count == len(raw)


def test_overlapping_batch_stores_only_new_points_and_folds_them_once(api):
    run_id = _run(api)
    first = [{"step": s, "time": 1e9 + s, "values": {"loss": 10.0 - s}} for s in range(0, 20)]
    overlap = [{"step": s, "time": 1e9 + s, "values": {"loss": 10.0 - s}} for s in range(15, 40)]
    assert api.post(f"/runs/{run_id}/metrics", first).json()["stored"] == 20
    assert api.post(f"/runs/{run_id}/metrics", overlap).json() == {"received": 25, "stored": 20}
    run = Run.objects.get(public_id=run_id)
    series = MetricSeries.objects.get(run=run, key="loss")
    assert (series.count, series.first_step, series.last_step, series.last_value) == (40, 0, 39, 10.0 - 39)
    assert (series.min_value, series.max_value) == (10.0 - 39, 10.0)
    _rollups_match_raw(run, "loss")


def test_same_step_twice_in_a_batch_keeps_the_first_and_counts_once(api):
    run_id = _run(api)
    batch = [{"step": 3, "values": {"a": 1.0}}, {"step": 3, "values": {"a": 2.0, "b": 5.0}}]
    assert api.post(f"/runs/{run_id}/metrics", batch).json() == {"received": 3, "stored": 2}
    run = Run.objects.get(public_id=run_id)
    assert dict(Metric.objects.filter(series__run=run).values_list("series__key", "value")) == {"a": 1.0, "b": 5.0}
    assert MetricSeries.objects.get(run=run, key="a").count == 1


def test_null_values_and_missing_times_are_stored_as_null(api):
    run_id = _run(api)
    batch = [{"step": s, "values": {"x": None if s % 3 == 0 else float(s), "y": float("nan") if s == 7 else s}}
             for s in range(40)]
    body = str(batch).replace("None", "null").replace("nan", "NaN").replace("'", '"')
    assert api.post(f"/runs/{run_id}/metrics", body, raw=True).json()["stored"] == 80
    run = Run.objects.get(public_id=run_id)
    xs = dict(Metric.objects.filter(series__run=run, series__key="x").values_list("step", "value"))
    assert xs[0] is None and xs[1] == 1.0 and xs[39] is None
    assert Metric.objects.filter(series__run=run, time__isnull=False).count() == 0
    _rollups_match_raw(run, "x")
    y = MetricSeries.objects.get(run=run, key="y")
    assert (y.min_value, y.max_value, y.last_value) == (0.0, 39.0, 39.0)


def test_a_bad_key_is_refused_with_its_place_and_the_rest_is_stored(api):
    run_id = _run(api)
    batch = [{"step": 0, "values": {"ok": 1.0}}, {"step": 1, "values": {"": 2.0}}]
    res = api.post(f"/runs/{run_id}/metrics", batch)
    assert res.status_code == 200 and res.json()["refused"] == [
        {"point": 1, "step": 1, "key": "", "length": 0, "error": "metric key must have 1 to 500 characters"}]
    assert list(Metric.objects.filter(series__run__public_id=run_id).values_list("series__key", "step")) == [("ok", 0)]


@pytest.mark.parametrize("n", [1, 2000])
def test_many_keys_many_steps_fold_exactly(api, n):
    run_id = _run(api)
    batch = [{"step": s * 7, "time": 1e9 + s, "values": {f"k{k}": math.sin(s * (k + 1)) for k in range(5)}}
             for s in range(n)]
    assert api.post(f"/runs/{run_id}/metrics", batch).json()["stored"] == 5 * n
    run = Run.objects.get(public_id=run_id)
    for k in range(5):
        _rollups_match_raw(run, f"k{k}")
