"""Deleting a run from its page and the API: editors only, a confirmation that names what goes,
everything of the run removed (rollouts, search documents, labels, judge verdicts, artifacts, blobs) and audited;
a big run is marked "deleting" and deleted by a real Celery worker."""

from __future__ import annotations

import time
from typing import Any

import pytest

from deeprepo_web import storage
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.audit.models import Action, AuditEvent
from deeprepo_web.judge.models import JudgeJob, Verdict
from deeprepo_web.labels.models import Mark
from deeprepo_web.labels.services import label_create, mark_create
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import BlobRef, Rollout, Run, Turn
from deeprepo_web.runs.services import run_create
from deeprepo_web.search.indexer import search_index_update
from deeprepo_web.search.models import Doc
from tests.factories import rollout


def _full_run(team: Any, name: str = "grpo-to-delete", rollouts: int = 4) -> Run:
    run, _ = run_create(project=team.project, name=name, environment="math")
    metrics_ingest(run=run, points=[{"step": i, "values": {"reward": i / 10}} for i in range(5)])
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i}", uid=f"{name}-{i}", sample_index=i, turns=2)
                                       for i in range(rollouts)])
    label = label_create(project=team.project, name=f"gives-up-{name}")
    first = Rollout.objects.filter(run=run).first()
    mark_create(label=label, rollout=first, user=team.editor)
    job = JudgeJob.objects.create(project=team.project, rubric="gives up?", label=label, status="done")
    Verdict.objects.create(job=job, rollout=first, run=run, answer=True, explanation="it stops at turn 2")
    sha = storage.blob_put(f"a long body of {name}".encode() * 100)
    BlobRef.objects.create(sha=sha, run=run)
    Artifact.objects.create(run=run, name="model.safetensors", size=3, sha256="0" * 64,
                            storage_key=f"{storage.run_prefix(run.project_id, run.public_id)}model.safetensors")
    while search_index_update(budget_seconds=5):
        pass
    return run


def test_confirmation_names_what_goes_and_post_deletes_everything(client, team):
    run = _full_run(team)
    keep = _full_run(team, name="grpo-stays")
    sha = BlobRef.objects.get(run=run).sha
    client.force_login(team.editor)
    page = client.get(f"/p/demo/runs/{run.public_id}/delete/").content.decode()
    assert "Delete run grpo-to-delete?" in page
    for text in ("<b>4</b> rollouts with every turn and tool call (8 model turns)", "<b>1</b> metric key", "<b>1</b> label", "<b>1</b> judge verdict",
                 "<b>1</b> artifact", "<b>1</b> stored blob", "search documents"):
        assert text in page, text
    assert Run.objects.filter(pk=run.pk).exists()  # looking is not deleting

    res = client.post(f"/p/demo/runs/{run.public_id}/delete/")
    assert res.status_code == 302 and res["Location"] == "/p/demo/"
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Rollout.objects.filter(run_id=run.pk).exists()
    assert not Doc.objects.filter(run_id=run.pk).exists() and Doc.objects.filter(run_id=keep.pk).exists()
    assert not Mark.objects.filter(run_id=run.pk).exists() and Mark.objects.filter(run=keep).exists()
    assert not Verdict.objects.filter(run_id=run.pk).exists() and Verdict.objects.filter(run=keep).exists()
    with pytest.raises(FileNotFoundError):
        storage.blob_get(sha)
    assert AuditEvent.objects.filter(action=Action.RUN_DELETED, actor="editor",
                                     target__contains=run.public_id).count() == 1
    table = client.get("/p/demo/").content.decode()
    assert f"({run.public_id}) deleted." in table and f'data-run="{run.public_id}"' not in table
    assert f"({run.public_id}) deleted." not in client.get("/p/demo/").content.decode()  # said once


def test_a_run_goes_in_slices_of_rollouts_and_none_is_left(team, monkeypatch):
    """run_delete removes a big run's rollouts ROLLOUTS_PER_DELETE at a time: with slices of 2, a run of 5
    goes in three, the last one short, and the other run's rollouts, documents and marks stay."""
    from deeprepo_web.runs import services
    from deeprepo_web.runs.models import RolloutTurns

    run = _full_run(team, rollouts=5)
    keep = _full_run(team, name="grpo-stays", rollouts=3)
    ids = list(Rollout.objects.filter(run=run).values_list("pk", flat=True))
    monkeypatch.setattr(services, "ROLLOUTS_PER_DELETE", 2)

    assert services.run_delete(run=run)["rollouts"] == 5
    assert not RolloutTurns.objects.filter(rollout_id__in=ids).exists()
    assert not Rollout.objects.filter(pk__in=ids).exists()
    assert RolloutTurns.objects.filter(rollout__run=keep).count() == 3 == keep.rollouts.count()
    assert Mark.objects.filter(run=keep).count() == 1


def test_viewers_and_outsiders_cannot_delete(client, team):
    run = _full_run(team)
    for user in (team.viewer, team.outsider):
        client.force_login(user)
        assert client.get(f"/p/demo/runs/{run.public_id}/delete/").status_code == 404
        assert client.post(f"/p/demo/runs/{run.public_id}/delete/").status_code == 404
    client.force_login(team.viewer)
    assert 'id="delete-run"' not in client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    client.force_login(team.editor)
    assert 'id="delete-run"' in client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    assert Run.objects.filter(pk=run.pk).exists()


def test_api_deletes_a_run_and_says_what_went(api, other_api, team, client):
    run = _full_run(team)
    url = f"/api/v1/runs/{run.public_id}"
    assert client.delete(url, headers={"Authorization": f"Bearer {team.other_key}"}).status_code == 404
    res = client.delete(url, headers={"Authorization": f"Bearer {team.key}"})
    assert res.status_code == 200, res.content
    body = res.json()
    assert body["deleted"] is True and body["contents"]["rollouts"] == 4 and body["contents"]["marks"] == 1
    assert not Run.objects.filter(pk=run.pk).exists() and not Turn.objects.filter(rollout__run_id=run.pk).exists()
    assert client.delete(url, headers={"Authorization": f"Bearer {team.key}"}).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_big_run_is_marked_deleting_and_deleted_by_the_worker(client, team, settings, celery_worker):
    settings.DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS = 2  # this run's 4 rollouts are "big"
    run = _full_run(team)
    client.force_login(team.editor)
    res = client.post(f"/p/demo/runs/{run.public_id}/delete/", follow=True)
    page = res.content.decode()
    assert "is being deleted in the background" in page
    deadline = time.monotonic() + 60
    seen_deleting = 'status-deleting">deleting<' in page  # the worker may already be done
    while Run.objects.filter(pk=run.pk).exists():
        assert time.monotonic() < deadline, celery_worker.log_text()[-3000:]
        assert celery_worker.proc.poll() is None
        seen_deleting = seen_deleting or 'status-deleting">deleting<' in client.get("/p/demo/").content.decode()
        time.sleep(0.2)
    assert not Rollout.objects.filter(run_id=run.pk).exists() and not Doc.objects.filter(run_id=run.pk).exists()
    event = AuditEvent.objects.get(action=Action.RUN_DELETED, target__contains=run.public_id)
    assert event.actor == "editor"  # the worker deletes on behalf of who asked
    assert seen_deleting


def test_the_runs_table_says_deleting_while_the_worker_has_not_started(client, team, settings):
    settings.DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS = 2
    settings.CELERY_TASK_ALWAYS_EAGER = False
    run = _full_run(team)
    client.force_login(team.editor)
    client.post(f"/p/demo/runs/{run.public_id}/delete/")  # committed only at the test's end: no task sent
    run.refresh_from_db()
    assert run.deletion_requested_at is not None
    assert 'status-deleting">deleting<' in client.get("/p/demo/").content.decode()
    page = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    assert 'id="run-deleting"' in page and 'id="delete-run"' not in page


def test_ingest_into_a_run_being_deleted_is_refused_and_stores_nothing(api, team, client, settings):
    settings.DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS = 2
    settings.CELERY_TASK_ALWAYS_EAGER = False  # the worker has not started: the run waits, marked
    run = _full_run(team)
    client.force_login(team.editor)
    client.post(f"/p/demo/runs/{run.public_id}/delete/")
    run.refresh_from_db()
    assert run.deletion_requested_at is not None
    before = (Rollout.objects.filter(run=run).count(), dict(run.summary))

    res = api.post(f"/runs/{run.public_id}/metrics", [{"step": 9, "values": {"reward": 0.9}}])
    assert res.status_code == 409, res.content
    assert "is being deleted" in res.json()["error"] and "nothing was stored" in res.json()["error"]
    res = api.post(f"/runs/{run.public_id}/rollouts", [rollout("ex-late", uid="late-1")])
    assert res.status_code == 409, res.content
    assert "is being deleted" in res.json()["error"]

    run.refresh_from_db()
    assert (Rollout.objects.filter(run=run).count(), dict(run.summary)) == before
    assert not Rollout.objects.filter(uid="late-1").exists()
    assert run.series.get(key="reward").last_step == 4  # step 9 was not stored
