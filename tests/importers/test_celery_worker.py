"""A large upload imported by a REAL Celery worker (subprocess) over the machine's Redis, on the test database."""

from __future__ import annotations

import time

import pytest

from deeprepo_web.importers.jobs import import_job_run
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.runs.models import Rollout

from .conftest import vf_row, write_vf

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(celery_worker, team):
    # The suite's one real worker (tests/jobs/worker.py): a second one reconfiguring the shared
    # Celery app under it broke the jobs tests that ran after.
    return celery_worker.proc


def test_large_upload_is_imported_by_a_real_worker(client, team, settings, tmp_path, worker):
    settings.DEEPREPO_IMPORT_INLINE_BYTES = 1024  # anything bigger goes to the worker
    folder = write_vf(tmp_path / "big-eval", [vf_row(i, i % 50) for i in range(600)])
    client.force_login(team.editor)
    with open(folder / "metadata.json", "rb") as meta, open(folder / "results.jsonl", "rb") as results:
        assert client.post("/p/demo/import/", {"files": [meta, results]}).status_code == 302
    job = ImportJob.objects.get()
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.is_final:
            break
        assert worker.poll() is None
        time.sleep(0.3)
    assert job.status == "done", (job.status, job.error)
    assert job.progress == 600 and job.report["runs"][0]["rollouts"] == 600
    assert Rollout.objects.filter(run__project=team.project).count() == 600
    assert job.started_at and job.finished_at
    # a duplicate delivery of the same task does nothing
    assert import_job_run(job_id=job.pk) is None
    page = client.get("/p/demo/import/").content.decode()
    assert "600" in page and "data-live-url" not in page
