"""The worker importing a big upload dies (SIGKILL to its whole process group: main process, pool,
beat and the parse process) in the middle of the import. Its heartbeat stops; another worker's
beat sends the task again and that worker takes the job over: the import finishes and every
rollout is stored exactly once.

Real parts: a throwaway redis-server, two real workers with beat, the test database.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.importers.jobs import import_job_create, import_job_enqueue
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.runs.models import Rollout
from tests.importers.conftest import vf_row
from tests.jobs.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = 20_000  # ~15 MB: several seconds of import, parsed in a child process
STALE_SECONDS = 2  # DEEPREPO_IMPORT_STALE_SECONDS in the workers: a silent heartbeat is soon noticed


def _files(tmp_path: Path) -> list[tuple[str, Any]]:
    meta = json.dumps({"env_id": "killed", "model": "m", "num_examples": ROWS // 4, "rollouts_per_example": 4})
    rows = "".join(json.dumps(vf_row(i, i // 4)) + "\n" for i in range(ROWS))
    return [("metadata.json", [meta.encode()]), ("results.jsonl", [rows.encode()])]


def test_import_taken_over_after_its_worker_is_killed(
    team: Any, settings: Any, tmp_path: Path, own_redis: Any, start_own_worker: Any,
) -> None:
    settings.DEEPREPO_IMPORT_INLINE_BYTES = 1024  # to the worker
    first = start_own_worker(concurrency=1, DEEPREPO_IMPORT_STALE_SECONDS=str(STALE_SECONDS))
    job = import_job_create(project=team.project, user=team.editor, files=_files(tmp_path))
    import_job_enqueue(job=job)

    stored_at_kill = wait_for(lambda: Rollout.objects.count(), timeout=60, what="the first batches stored")
    job.refresh_from_db()
    assert job.status == "running" and stored_at_kill < ROWS
    os.killpg(first.proc.pid, signal.SIGKILL)  # no one is left to mark the job failed or to requeue it
    first.proc.wait(timeout=10)

    second = start_own_worker(concurrency=1, DEEPREPO_IMPORT_STALE_SECONDS=str(STALE_SECONDS))
    try:
        wait_for(lambda: ImportJob.objects.filter(pk=job.pk, status__in=["done", "failed"]).exists(),
                 timeout=120, what="the import finished by the second worker")
    except AssertionError:
        job.refresh_from_db()
        raise AssertionError(f"{job.status} {job.error}\n{second.log_text()[-4000:]}") from None
    job.refresh_from_db()
    assert (job.status, job.error) == ("done", ""), (job.status, job.error)
    assert Rollout.objects.count() == ROWS  # every rollout once: nothing lost, nothing doubled
    run = job.report["runs"][0]
    assert run["rollouts_received"] == ROWS and run["rollouts"] + run["already"] == ROWS
    assert run["already"] >= stored_at_kill  # what the dead worker stored was found, not written again
