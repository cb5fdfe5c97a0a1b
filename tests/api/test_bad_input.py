"""Every bad input gets one clear line naming what was wrong, and nothing of a rejected batch is kept."""

from __future__ import annotations

import json

from deeprepo_web.runs.models import Example, Metric, Rollout, ToolCall
from deeprepo_web.storage import blob_get
from tests.factories import rollout


def _run(api) -> str:
    return api.post("/runs", {"name": "r"}).json()["id"]


def test_malformed_json_is_400_with_its_position(api):
    run_id = _run(api)
    res = api.post(f"/runs/{run_id}/metrics", '[{"step": 1, "values": {"a": 1}', raw=True)
    assert res.status_code == 400
    assert res.json()["error"].startswith("malformed JSON at line 1 column")


def test_wrong_type_is_422_naming_the_field(api):
    run_id = _run(api)
    res = api.post(f"/runs/{run_id}/metrics", [{"step": 0, "values": {"a": 1}}, {"step": "x", "values": {}}])
    assert res.status_code == 422
    assert res.json()["error"].startswith("points[1].step:")
    res = api.post(f"/runs/{run_id}/rollouts", [rollout("a"), rollout("b", reward="high")])
    assert res.status_code == 422 and res.json()["error"].startswith("rollouts[1].reward:")
    res = api.post("/runs", {"name": ""})
    assert res.status_code == 422 and "name" in res.json()["error"]


def test_a_rejected_batch_writes_nothing(api):
    run_id = _run(api)
    bad = [rollout("a"), rollout("b"), {"example_key": "c", "turns": [{"content": "no role"}]}]
    res = api.post(f"/runs/{run_id}/rollouts", bad)
    assert res.status_code == 422 and "rollouts[2].turns[0].role" in res.json()["error"]
    assert Rollout.objects.count() == 0 and Example.objects.count() == 0


def test_unknown_run_is_404(api):
    res = api.post("/runs/nope/metrics", [{"step": 0, "values": {"a": 1}}])
    assert res.status_code == 404 and res.json() == {"error": "not found"}


def test_body_over_the_limit_is_413(api, settings):
    run_id = _run(api)
    big = b"[" + b" " * (50 * 1024 * 1024) + b"]"
    res = api.post(f"/runs/{run_id}/metrics", big, raw=True)
    assert res.status_code == 413 and "over the limit" in res.json()["error"]


def test_nan_reward_is_refused_with_a_clear_line(api):
    run_id = _run(api)
    body = json.dumps([rollout("a")]).replace('"reward": 0.5', '"reward": NaN')
    res = api.post(f"/runs/{run_id}/rollouts", body, raw=True)
    assert res.status_code == 422
    assert res.json()["error"] == "rollouts[0].reward: must be a finite number (NaN and Infinity are refused here)"
    assert Rollout.objects.count() == 0


def test_huge_tool_output_goes_to_the_blob_store(api, settings):
    run_id = _run(api)
    big = "x" * (5 * 1024 * 1024)
    record = rollout("a")
    record["turns"][1]["tool_calls"][0]["output"] = big
    res = api.post(f"/runs/{run_id}/rollouts", [record])
    assert res.status_code == 200, res.content
    call = ToolCall.objects.get(name="read_file", turn__index=1)
    assert call.output_size == len(big) and call.output_blob
    assert len(call.output) < 100_000
    assert blob_get(call.output_blob).decode() == big


def test_ten_kilobyte_example_key_is_stored(api):
    run_id = _run(api)
    key = "k" * 10_240
    res = api.post(f"/runs/{run_id}/rollouts", [rollout(key), rollout(key, sample_index=1)])
    assert res.status_code == 200 and res.json()["stored"] == 2
    assert Example.objects.get().key == key


def test_nul_bytes_and_lone_surrogates_are_stored_replaced(api):
    run_id = _run(api)
    body = json.dumps([rollout("a")]).replace("Turn 0", "Turn \\u0000 \\ud800 0")
    res = api.post(f"/runs/{run_id}/rollouts", body, raw=True)
    assert res.status_code == 200, res.content
    assert Rollout.objects.count() == 1


def test_metric_batch_with_bad_key_keeps_the_good_ones(api):
    run_id = _run(api)
    res = api.post(f"/runs/{run_id}/metrics", [{"step": 0, "values": {"ok": 1}}, {"step": 1, "values": {"": 2}}])
    assert res.status_code == 200 and res.json()["stored"] == 1
    assert [r["key"] for r in res.json()["refused"]] == [""]
    assert Metric.objects.count() == 1


def test_numbers_outside_the_columns_are_422_not_500(api):
    run_id = _run(api)
    res = api.post(f"/runs/{run_id}/rollouts", [rollout("a", input_tokens=2**70)])
    assert res.status_code == 422 and res.json()["error"].startswith("rollouts[0].input_tokens:")
    res = api.post(f"/runs/{run_id}/metrics", [{"step": 2**64, "values": {"a": 1}}])
    assert res.status_code == 422 and res.json()["error"].startswith("points[0].step:")
    assert api.post("/runs", {"name": "x", "checkpoint_step": 2**40}).status_code == 422
