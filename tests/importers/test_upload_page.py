"""The import page: editors upload, viewers only look, outsiders see nothing; jobs show their report."""

from __future__ import annotations

import json
import zipfile
from io import BytesIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from deeprepo_web.importers.models import ImportJob
from deeprepo_web.runs.models import Rollout, Run

from .conftest import vf_row


def _vf_files(n: int = 4, bad_line: int | None = None) -> list[SimpleUploadedFile]:
    rows = [json.dumps(vf_row(i, i % 2)) for i in range(n)]
    if bad_line is not None:
        rows[bad_line - 1] = "{not json"
    meta = json.dumps({"env_id": "toy", "model": "m", "num_examples": 2, "rollouts_per_example": 2})
    return [SimpleUploadedFile("metadata.json", meta.encode()),
            SimpleUploadedFile("results.jsonl", ("\n".join(rows) + "\n").encode())]


def _login(client, user):
    client.force_login(user)
    return client


def test_editor_uploads_several_files_and_sees_the_report(client, team, django_capture_on_commit_callbacks):
    _login(client, team.editor)
    with django_capture_on_commit_callbacks(execute=True):
        res = client.post("/p/demo/import/", {"files": _vf_files(bad_line=3)})
    assert res.status_code == 302
    job = ImportJob.objects.get()
    assert job.status == "done" and job.user == team.editor and job.source_name.startswith("2 files")
    run = Run.objects.get(project=team.project)
    assert Rollout.objects.filter(run=run).count() == 3
    page = client.get("/p/demo/import/").content.decode()
    assert run.name in page and f"/p/demo/runs/{run.public_id}/" in page
    assert "results.jsonl:3" in page and "invalid JSON" in page
    assert "uploads" not in page  # problems name the user's file, not our disk layout


def test_uploading_the_same_files_again_doubles_nothing(client, team, django_capture_on_commit_callbacks):
    _login(client, team.editor)
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            client.post("/p/demo/import/", {"files": _vf_files()})
    assert ImportJob.objects.filter(status="done").count() == 2
    assert Run.objects.count() == 1 and Rollout.objects.count() == 4
    second = ImportJob.objects.order_by("-pk").first()
    assert second.report["runs"][0]["created"] is False and second.report["runs"][0]["already"] == 4


def test_zipped_folder_upload(client, team, django_capture_on_commit_callbacks):
    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in _vf_files():
            z.writestr(f"toy-eval/{f.name}", f.read())
    _login(client, team.owner)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/p/demo/import/", {"files": SimpleUploadedFile("toy-eval.zip", buf.getvalue())})
    job = ImportJob.objects.get()
    assert job.status == "done" and job.report["format"] == "zip"
    assert Run.objects.get().name.endswith("toy-eval") and Rollout.objects.count() == 4


def test_unknown_file_fails_with_a_clear_line(client, team, django_capture_on_commit_callbacks):
    _login(client, team.editor)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/p/demo/import/", {"files": SimpleUploadedFile("notes.txt", b"hello world\n")})
    job = ImportJob.objects.get()
    assert job.status == "failed" and "unknown format" in job.error and Run.objects.count() == 0
    page = client.get("/p/demo/import/").content.decode()
    assert "notes.txt" in page and "unknown format" in page


def test_viewer_sees_jobs_but_no_form_and_cannot_post(client, team):
    _login(client, team.viewer)
    page = client.get("/p/demo/import/")
    assert page.status_code == 200 and b'type="file"' not in page.content
    res = client.post("/p/demo/import/", {"files": _vf_files()})
    assert res.status_code == 404 and ImportJob.objects.count() == 0


@pytest.mark.parametrize("method", ["get", "post"])
def test_outsider_gets_404(client, team, method):
    _login(client, team.outsider)
    res = getattr(client, method)("/p/demo/import/")
    assert res.status_code == 404


def test_anonymous_is_sent_to_login(client, team):
    assert client.get("/p/demo/import/").status_code == 302


def test_empty_post_says_what_is_missing(client, team):
    _login(client, team.editor)
    res = client.post("/p/demo/import/", {})
    assert res.status_code == 400 and b"files: choose a file" in res.content


def test_job_row_polls_until_done_then_286(client, team):
    job = ImportJob.objects.create(project=team.project, source_name="big.jsonl", path="/nowhere", progress=1234)
    _login(client, team.viewer)
    page = client.get("/p/demo/import/").content.decode()
    assert f'data-live-url="/p/demo/import/{job.pk}/" data-live-every="1"' in page
    row = client.get(f"/p/demo/import/{job.pk}/", headers={"HX-Request": "true"})
    assert row.status_code == 200 and b"1,234 rows read" in row.content and b"<html" not in row.content
    ImportJob.objects.filter(pk=job.pk).update(status="done", report={"runs": [], "problems": [], "rows": 5,
                                                                      "seconds": 0.5, "problems_total": 0})
    row = client.get(f"/p/demo/import/{job.pk}/", headers={"HX-Request": "true"})
    assert row.status_code == 286 and b"data-live-url" not in row.content


def test_job_of_another_project_is_404(client, team):
    job = ImportJob.objects.create(project=team.other_project, source_name="x", path="/nowhere")
    _login(client, team.editor)
    assert client.get(f"/p/demo/import/{job.pk}/").status_code == 404
    assert client.get(f"/p/other/import/{job.pk}/").status_code == 404


def test_large_upload_goes_to_celery(client, team, settings, django_capture_on_commit_callbacks):
    """Above the inline threshold the job is queued for a worker (run eagerly here; a real worker in
    test_celery_worker.py)."""
    from workers.celery import app

    app.loader.import_default_modules()  # the tasks register as a worker's do (alone, nothing imported them)
    settings.DEEPREPO_IMPORT_INLINE_BYTES = 10
    app.conf.task_always_eager = True
    try:
        _login(client, team.editor)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            client.post("/p/demo/import/", {"files": _vf_files()})
        assert ImportJob.objects.get().status == "queued"
        for cb in callbacks:
            cb()
    finally:
        app.conf.task_always_eager = False
    assert ImportJob.objects.get().status == "done" and Rollout.objects.count() == 4
