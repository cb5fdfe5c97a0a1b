"""A metrics batch with one bad key (longer than the limit) keeps its good keys: only the bad key
is refused, named in the answer and on the run page (issue 25, item 7)."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.runs.models import Metric, MetricSeries

pytestmark = pytest.mark.django_db

LONG = "eval/" + "very_long_metric_name_" * 30  # 665 characters


def test_one_long_key_loses_nothing_else(api: Any, client: Any, team: Any) -> None:
    run_id = api.post("/runs", {"name": "long-keys"}).json()["id"]
    batch = [{"step": s, "values": {"reward": s / 10, "loss": 1 - s / 10, **({LONG: 0.5} if s == 2 else {})}}
             for s in range(4)]
    res = api.post(f"/runs/{run_id}/metrics", batch)
    assert res.status_code == 200, res.content
    body = res.json()
    assert body["stored"] == 8 and body["received"] == 9
    [refused] = body["refused"]
    assert (refused["point"], refused["step"], refused["length"]) == (2, 2, len(LONG))
    assert refused["key"] == LONG[:100] and "500 characters" in refused["error"]
    assert MetricSeries.objects.get(run__public_id=run_id, key="reward").count == 4
    assert not Metric.objects.filter(series__run__public_id=run_id, series__key=LONG).exists()
    client.force_login(team.viewer)
    page = client.get(f"/p/{team.project.slug}/runs/{run_id}/").content.decode()
    assert "The server refused data sent to this run" in page
    assert "eval/very_long_metric_name_very_long" in page and f"{len(LONG)} characters" in page


def test_a_batch_of_only_bad_keys_stores_nothing_and_says_so(api: Any) -> None:
    run_id = api.post("/runs", {"name": "only-bad"}).json()["id"]
    res = api.post(f"/runs/{run_id}/metrics", [{"step": 0, "values": {LONG: 1.0}}])
    assert res.status_code == 200 and res.json()["stored"] == 0 and len(res.json()["refused"]) == 1
