"""Retention: a project keeps rollout bodies and OTLP items for N days; the beat sweep clears older
ones in bounded batches, frees blobs nothing else uses, and leaves runs, rewards and metrics."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from deeprepo_web import storage
from deeprepo_web.analysis.behaviour import error_signature
from deeprepo_web.otlp.models import OtlpItem
from deeprepo_web.retention.models import RetentionPolicy
from deeprepo_web.retention.services import policy_set, retention_sweep
from deeprepo_web.runs.models import BlobRef, MetricSeries, Rollout, Run, ToolCall, Turn
from tests.factories import rollout

SHARED = "the same long tool output in both runs. " * 10


def _run(api, name: str, n: int) -> Run:
    run_id = api.post("/runs", {"name": name}).json()["id"]
    api.post(f"/runs/{run_id}/metrics", {"points": [{"step": s, "values": {"reward": s}} for s in range(5)]})
    records = [rollout(f"ex-{i}", reward=i / n) for i in range(n)]
    for i, r in enumerate(records):
        r["turns"][1]["content"] = f"{name} answer {i}: " + "a long body that goes to the blob store. " * 10
        r["turns"][1]["tool_calls"][0]["output"] = SHARED
        r["turns"][1]["tool_calls"][0]["is_error"] = True
    assert api.post(f"/runs/{run_id}/rollouts", {"rollouts": records}).status_code == 200
    return Run.objects.get(public_id=run_id)


def _age(run: Run, days: int) -> None:
    Rollout.objects.filter(run=run).update(created_at=timezone.now() - timedelta(days=days))


def _item(run: Run, trace: str, key: str, days: int) -> None:
    OtlpItem.objects.create(run=run, trace_id=trace, key=key, kind="span", span_id=key)
    OtlpItem.objects.filter(run=run, trace_id=trace, key=key).update(received_at=timezone.now() - timedelta(days=days))


def test_old_bodies_are_cleared_in_batches_numbers_stay(api, team, settings):
    settings.DEEPREPO_BLOB_THRESHOLD = 64
    old, young = _run(api, "old", 5), _run(api, "young", 2)
    _age(old, 40)
    policy_set(project=team.project, keep_days=30)
    old_blobs = set(BlobRef.objects.filter(run=old).values_list("sha", flat=True))
    shared = old_blobs & set(BlobRef.objects.filter(run=young).values_list("sha", flat=True))
    assert len(shared) == 1 and len(old_blobs) == 6
    rewards = sorted(Rollout.objects.filter(run=old).values_list("reward", flat=True))
    line = SHARED.rstrip()  # the whole output's last line is kept on the row, as bodies are
    assert {(tuple(r.tools), tuple(map(tuple, r.tool_errors))) for r in Rollout.objects.filter(run=old)} == {
        (("llm_batch", "llm_query", "read_file"), (("read_file", 1, line, error_signature(line)),))}

    first = retention_sweep(batch=2, budget=1)  # bounded: one batch of two rollouts
    assert first.bodies == 2
    assert Turn.objects.filter(rollout__run=old).exclude(content="").values("rollout").distinct().count() == 3

    retention_sweep(batch=2)
    assert not Turn.objects.filter(rollout__run=old).exclude(content="", reasoning="", content_blob="").exists()
    assert not ToolCall.objects.filter(rollout__run=old).exclude(output="", output_blob="").exists()
    # The error lines (and their signatures) go with the outputs; which tool failed, and at which turn, stays.
    assert {(tuple(r.tools), tuple(map(tuple, r.tool_errors))) for r in Rollout.objects.filter(run=old)} == {
        (("llm_batch", "llm_query", "read_file"), (("read_file", 1, "", ""),))}
    assert Rollout.objects.filter(run=young, tool_errors__0__2=line).count() == 2
    assert Turn.objects.filter(rollout__run=young, content_blob__gt="").count() == 2  # young bodies stay
    # Numbers stay: rollouts, rewards, sizes, metrics.
    assert sorted(Rollout.objects.filter(run=old).values_list("reward", flat=True)) == rewards
    assert Turn.objects.filter(rollout__run=old, content_size__gt=300).count() == 5
    assert MetricSeries.objects.get(run=old, key="reward").count == 5
    # Blobs: the old run's own ones leave the store; the one the young run also uses stays.
    store = storage.backend()
    assert set(BlobRef.objects.filter(run=old).values_list("sha", flat=True)) == set()
    assert [store.exists(storage.blob_key(s)) for s in shared] == [True]
    assert not any(store.exists(storage.blob_key(s)) for s in old_blobs - shared)
    policy = RetentionPolicy.objects.get(project=team.project)
    assert policy.bodies_cleared == 5 and policy.last_sweep_at is not None
    assert retention_sweep(batch=2).bodies == 0  # nothing left to do, nothing reread


def test_otlp_items(api, team, settings):
    run = _run(api, "traced", 1)
    other = Run.objects.create(project=team.other_project, name="other")
    Rollout.objects.filter(run=run).update(uid="otlp-" + "a" * 32)
    for trace, key, days in (("b" * 32, "s1", 40), ("b" * 32, "s2", 2)):
        _item(run, trace, key, days)
    _item(other, "c" * 32, "s3", 40)  # no policy there, no rollout: kept
    policy_set(project=team.project, keep_days=30)
    retention_sweep()
    assert sorted(OtlpItem.objects.values_list("key", flat=True)) == ["s2", "s3"]
    # Without a policy, items whose trace became a rollout go after DEEPREPO_OTLP_ITEM_DAYS.
    policy_set(project=team.project, keep_days=None)
    _item(run, "a" * 32, "s4", 9)
    _item(run, "a" * 32, "s5", 1)
    retention_sweep()
    assert sorted(OtlpItem.objects.values_list("key", flat=True)) == ["s2", "s3", "s5"]


def test_the_setting_on_the_settings_page(client, team):
    url = reverse("retention_set", args=["demo"])
    client.force_login(team.editor)
    assert client.post(url, {"keep_days": "30"}).status_code == 404
    client.force_login(team.owner)
    assert client.post(url, {"keep_days": "30"}).status_code == 302
    html = client.get(reverse("project_settings", args=["demo"])).content.decode()
    assert 'name="keep_days" type="number" min="1" max="36500" value="30"' in html and "Retention" in html
    res = client.post(url, {"keep_days": "-4"})
    assert res.status_code == 400 and "keep_days" in res.content.decode()
    assert client.post(url, {"keep_days": ""}).status_code == 302
    assert RetentionPolicy.objects.get(project=team.project).keep_days is None
