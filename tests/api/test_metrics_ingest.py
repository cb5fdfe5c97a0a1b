from __future__ import annotations

import math

from deeprepo_web.runs.models import Metric, MetricSeries, Run
from deeprepo_web.runs.selectors import series_downsampled


def _run(api) -> str:
    return api.post("/runs", {"name": "r"}).json()["id"]


def test_points_are_stored_once_even_when_sent_twice(api):
    run_id = _run(api)
    batch = [{"step": s, "time": 1700000000 + s, "values": {"reward": s / 10, "loss": 1 - s / 10}} for s in range(10)]
    first = api.post(f"/runs/{run_id}/metrics", batch).json()
    again = api.post(f"/runs/{run_id}/metrics", batch).json()
    assert first == {"received": 20, "stored": 20}
    assert again == {"received": 20, "stored": 0}
    run = Run.objects.get(public_id=run_id)
    assert Metric.objects.filter(series__run=run).count() == 20
    reward = MetricSeries.objects.get(run=run, key="reward")
    assert reward.count == 10 and reward.last_step == 9 and reward.last_value == 0.9


def test_series_endpoint_returns_points_in_step_order(api):
    run_id = _run(api)
    api.post(f"/runs/{run_id}/metrics", [{"step": s, "values": {"reward": float(s)}} for s in (3, 1, 2)])
    body = api.get(f"/runs/{run_id}/series", key="reward").json()
    assert body["step"] == [1, 2, 3] and body["value"] == [1.0, 2.0, 3.0]
    assert api.get(f"/runs/{run_id}/series").json() == {"keys": ["reward"]}


def test_downsampled_series_keeps_spikes_and_bounds_buckets(api):
    run_id = _run(api)
    n = 50_000
    values = [0.0] * n
    values[31_337] = 100.0  # one spike in fifty thousand
    values[7_777] = -50.0
    for start in range(0, n, 5000):
        api.post(f"/runs/{run_id}/metrics",
                 [{"step": s, "values": {"loss": values[s]}} for s in range(start, start + 5000)])
    run = Run.objects.get(public_id=run_id)
    series = series_downsampled(run=run, key="loss", buckets=1000)
    assert series is not None
    assert len(series.steps) <= 1000
    assert max(v for v in series.max if v is not None) == 100.0
    assert min(v for v in series.min if v is not None) == -50.0
    assert series.steps[-1] == n - 1
    body = api.get(f"/runs/{run_id}/series", key="loss", buckets=5000).json()
    assert len(body["step"]) <= 2000  # the API caps at 2,000 buckets


def test_nan_and_infinity_metric_values_are_kept_and_left_out_of_rollups(api):
    run_id = _run(api)
    body = '[{"step": 0, "values": {"loss": 1.0}}, {"step": 1, "values": {"loss": NaN}}, {"step": 2, "values": {"loss": Infinity}}]'
    res = api.post(f"/runs/{run_id}/metrics", body, raw=True)
    assert res.status_code == 200 and res.json()["stored"] == 3
    run = Run.objects.get(public_id=run_id)
    stored = dict(Metric.objects.filter(series__run=run).values_list("step", "value"))
    assert stored[0] == 1.0 and math.isnan(stored[1]) and math.isinf(stored[2])
    series = MetricSeries.objects.get(run=run, key="loss")
    assert series.max_value == 1.0
    chart = api.get(f"/runs/{run_id}/series", key="loss").json()
    assert chart["value"] == [1.0, None, None]  # JSON has no NaN: charts get gaps


def test_series_endpoint_zooms_names_extremes_and_lists_nonfinite(api):
    run_id = _run(api)
    points = [{"step": s, "values": {"loss": 1.0 + s / 1000}} for s in range(3000)]
    points[2222]["values"]["loss"] = 9.0
    api.post(f"/runs/{run_id}/metrics", points)
    api.post(f"/runs/{run_id}/metrics", [{"step": 3000, "values": {"loss": "NaN"}}])
    whole = api.get(f"/runs/{run_id}/series", key="loss", buckets=100).json()
    assert whole["resolution"] > 1 and whole["nonfinite"] == [[3000, "NaN"]]
    zoomed = api.get(f"/runs/{run_id}/series", key="loss", buckets=100, start=2200, end=2250).json()
    assert zoomed["resolution"] == 1 and zoomed["step"][0] == 2200 and zoomed["step"][-1] == 2250
    assert zoomed["value"][22] == 9.0 and zoomed["nonfinite"] == []
    found = api.get(f"/runs/{run_id}/series", key="loss", extremes=1, start=2000, end=2999).json()
    assert found["max"] == {"step": 2222, "value": 9.0} and found["min"] == {"step": 2000, "value": 3.0}
    too_wide = api.get(f"/runs/{run_id}/series", key="loss", extremes=1, start=0, end=10**9)
    assert too_wide.status_code == 422 and "100000 steps apart" in too_wide.json()["error"]
