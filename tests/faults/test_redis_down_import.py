"""Redis (the Celery broker) is down when big uploads arrive: the upload page and the API answer
normally and the jobs wait, queued, with a note; once Redis is back, beat sends the lost task
again and a real worker imports each upload exactly once.

Real parts: a throwaway redis-server killed and started again on its port, a real worker with
beat on it, the test database.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from deeprepo_web.importers.jobs import QUEUE_AWAY
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.runs.models import Rollout, Run
from tests.importers.conftest import vf_row
from tests.jobs.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 200  # rollouts per upload
STALE_SECONDS = 2  # DEEPREPO_IMPORT_STALE_SECONDS for the worker's beat: re-send lost imports soon


def _vf_upload(env: str) -> list[SimpleUploadedFile]:
    meta = json.dumps({"env_id": env, "model": "m", "num_examples": 20, "rollouts_per_example": 10})
    rows = "".join(json.dumps(vf_row(i, i % 20)) + "\n" for i in range(ROWS))
    return [SimpleUploadedFile("metadata.json", meta.encode()), SimpleUploadedFile("results.jsonl", rows.encode())]


def test_big_import_while_redis_is_down_waits_then_imports_once(
    client: Any, team: Any, settings: Any, own_redis: Any, start_own_worker: Any,
) -> None:
    settings.DEEPREPO_IMPORT_INLINE_BYTES = 1024  # both uploads are bigger: they go to the worker
    worker = start_own_worker(concurrency=2, DEEPREPO_IMPORT_STALE_SECONDS=str(STALE_SECONDS))
    own_redis.kill()
    assert not own_redis.ping()

    client.force_login(team.editor)
    t0 = time.monotonic()
    res = client.post("/p/demo/import/", {"files": _vf_upload("page-env")})
    assert res.status_code == 302, res.content[:2000]
    res = client.post("/api/v1/imports", {"files": _vf_upload("api-env")},
                      headers={"Authorization": f"Bearer {team.key}"})
    assert res.status_code == 202, res.content[:2000]
    assert res.json()["status"] == "queued" and res.json()["error"] == QUEUE_AWAY
    assert time.monotonic() - t0 < 10, "an upload while the broker is away must not hang"
    jobs = list(ImportJob.objects.order_by("pk"))
    assert [(j.status, j.error, j.size > 1024) for j in jobs] == [("queued", QUEUE_AWAY, True)] * 2
    page = client.get("/p/demo/import/")
    assert page.status_code == 200 and page.content.decode().count(QUEUE_AWAY) == 2

    own_redis.start()  # same port, empty: nothing of the lost messages survives
    back_at = timezone.now()

    def all_final() -> bool:
        return ImportJob.objects.filter(status__in=["done", "failed"]).count() == 2

    try:
        wait_for(all_final, timeout=30, what="both imports final")
    except AssertionError:
        states = list(ImportJob.objects.values_list("pk", "status", "error"))
        raise AssertionError(f"{states}\n{worker.log_text()[-4000:]}") from None
    for job in jobs:
        job.refresh_from_db()
        assert (job.status, job.error) == ("done", ""), (job.status, job.error)
        assert job.sent_at >= back_at  # sent again by beat after the broker came back
        run = Run.objects.get(project=team.project, public_id=job.report["runs"][0]["public_id"])
        assert job.report["runs"][0]["rollouts"] == ROWS
        assert Rollout.objects.filter(run=run).count() == ROWS  # imported once
    assert Run.objects.filter(project=team.project).count() == 2
    page_text = client.get("/p/demo/import/").content.decode()
    assert QUEUE_AWAY not in page_text and page_text.count('status-done">done') == 2
    assert worker.proc.poll() is None
