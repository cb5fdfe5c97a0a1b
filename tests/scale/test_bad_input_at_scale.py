"""Issue 30 item 7: inputs at the edge of what one request may carry are stored, or refused with
one clear line and nothing kept (through the real API, the real ingest service and Postgres)."""

from __future__ import annotations

import json

from django.urls import reverse

from deeprepo_web.runs.models import Metric, Rollout, ToolCall, Turn
from tests.factories import rollout


def _run(api) -> str:
    return api.post("/runs", {"name": "edge"}).json()["id"]


def test_a_rollout_of_2000_turns_is_stored_and_its_page_opens(api, client, team):
    run_id = _run(api)
    record = rollout("long", turns=0)
    record["turns"] += [{"role": "assistant" if i % 2 else "user", "content": f"turn {i}: keep going"}
                        for i in range(2000)]
    res = api.post(f"/runs/{run_id}/rollouts", [record])
    assert res.status_code == 200, res.content[:300]
    stored = Rollout.objects.get(run__public_id=run_id)
    assert Turn.objects.filter(rollout=stored).count() == 2001
    client.force_login(team.viewer)
    page = client.get(reverse("trajectory", args=["demo", run_id, stored.pk]))
    assert page.status_code == 200 and "turn 0: keep going" in page.content.decode()


def test_a_50_mb_tool_output_is_refused_whole_with_a_clear_error(api):
    run_id = _run(api)
    record = rollout("huge")
    record["turns"][1]["tool_calls"][0]["output"] = "y" * (50 * 1024 * 1024)
    res = api.post(f"/runs/{run_id}/rollouts", json.dumps([record]), raw=True)
    assert res.status_code == 413 and "over the limit" in res.json()["error"]
    assert not Rollout.objects.filter(run__public_id=run_id).exists() and not ToolCall.objects.exists()


def test_a_million_point_series_in_one_request_is_refused_clearly(api, settings):
    """10^6 points as compact JSON are ~54 MB, past the 32 MB a request may carry: one clear 413 (the
    client splits a 413'd batch and sends the halves), nothing half-stored, and the run still takes
    a normal batch afterwards."""
    run_id = _run(api)
    body = json.dumps([{"step": i, "values": {"loss": 1.0 / (i + 1)}} for i in range(1_000_000)],
                      separators=(",", ":"))
    assert len(body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    res = api.post(f"/runs/{run_id}/metrics", body, raw=True)
    assert res.status_code == 413 and "over the limit" in res.json()["error"]
    assert not Metric.objects.filter(series__run__public_id=run_id).exists()
    ok = api.post(f"/runs/{run_id}/metrics", [{"step": i, "values": {"loss": 0.5}} for i in range(10_000)])
    assert ok.status_code == 200 and Metric.objects.filter(series__run__public_id=run_id).count() == 10_000
