"""A large upload imported by a REAL Celery worker (subprocess) over the machine's Redis, on the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection

from deeprepo_web.importers.models import ImportJob
from deeprepo_web.importers.services import import_job_run
from deeprepo_web.runs.models import Rollout

from .conftest import vf_row, write_vf

REPO = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("DEEPREPO_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

pytestmark = pytest.mark.django_db(transaction=True)


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def worker(settings, team, tmp_path):
    if not _redis_up():
        pytest.fail(f"Redis is not reachable at {REDIS_URL} (CI starts it; see .ci/run)")
    from workers.celery import app

    # A queue of our own: other test sessions on the same Redis never see (or steal) our tasks.
    queue = f"test-importers-{uuid.uuid4().hex[:8]}"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{quote(db['USER'] or '')}{':' + quote(db['PASSWORD']) if db.get('PASSWORD') else ''}"
                        f"@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "DEEPREPO_DATA_DIR": str(settings.DATA_DIR),
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "DEEPREPO_CONN_MAX_AGE": "0",
    }
    log = open(tmp_path / "worker.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workers.celery", "worker", "-P", "solo", "-Q", queue,
         "-n", f"{queue}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    old = (app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options)

    def _reset_pools() -> None:
        # An earlier test may have opened the default (filesystem) broker: drop its cached pools.
        app.pool.force_close_all()
        app._pool = None
        app.amqp._producer_pool = None

    _reset_pools()
    app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options = REDIS_URL, queue, {}
    try:
        yield proc
    finally:
        _reset_pools()
        app.conf.broker_url, app.conf.task_default_queue, app.conf.broker_transport_options = old
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


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
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
        time.sleep(0.3)
    assert job.status == "done", (job.status, job.error, (tmp_path / "worker.log").read_text()[-3000:])
    assert job.progress == 600 and job.report["runs"][0]["rollouts"] == 600
    assert Rollout.objects.filter(run__project=team.project).count() == 600
    assert job.started_at and job.finished_at
    # a duplicate delivery of the same task does nothing
    assert import_job_run(job_id=job.pk) is None
    page = client.get("/p/demo/import/").content.decode()
    assert "600" in page and "hx-trigger" not in page
