"""The Celery worker's main process is SIGKILLed in the middle of a dispatch (and its pool and
beat with it, as when a container or node dies): nothing is lost and nothing is doubled.

The dead worker cannot requeue anything: the task message sits unacked in Redis (acks_late)
until the visibility timeout passes, then the other worker gets it. The kill lands after sbatch created
the job but before its id reached the database (a wrapper around the real sbatch pauses
there), so the redelivered dispatch must adopt the Slurm job, not submit a second one.
Beat's stale re-dispatch is pushed far out, so only the redelivery can save the job; the second
worker was already running (a fresh one would sweep unacked tasks once at start-up anyway).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.jobs.conftest import wait_for, wait_job
from tests.jobs.test_dispatch_crash import AFTER, _slurm_jobs_named, _wrapped_bin

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slurm]

VISIBILITY_TIMEOUT = 5  # seconds an unacked task waits before another worker may take it
WORKER_ENV = {
    "DEEPREPO_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
    "DEEPREPO_JOB_STALE_DISPATCH_SECONDS": "600",
}


def _owed(broker: redis.Redis, task: str) -> int:
    """Unacked messages of `task`. The dead worker's beat tasks (sync, re-sends) it had prefetched
    wait there too, and are no concern of this test."""
    return sum(json.loads(raw)[0]["headers"].get("task") == task for raw in broker.hvals("unacked"))


def test_worker_main_process_sigkilled_mid_dispatch(
    team: Any, slurm_cluster: Any, probe_template: Any, own_redis: Any, start_own_worker: Any, work: Path,
) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.launch import job_launch

    # Two workers from the start: the survivor has been polling for a while when its peer dies
    # (kombu throttles its look at unacked tasks; a fresh worker looks once at start-up).
    workers = [start_own_worker(concurrency=2, **WORKER_ENV) for _ in range(2)]
    cluster = cluster_save(project=team.project, name="slurm-wrapped", kind="slurm", settings_in={
        "slurm_conf": str(slurm_cluster.conf), "state_dir": str(work / "state"),
        "bin_dir": str(_wrapped_bin(work, AFTER)), "command_timeout": 90,
    })
    time.sleep(3 * VISIBILITY_TIMEOUT)  # let the survivor's restore counter run past its first sweep
    out = work / "p.json"
    launched_at = time.monotonic()
    job = job_launch(project=team.project, template=probe_template, cluster=cluster, user=team.editor,
                     params={"out": str(out), "sleep": 1})
    pool_pid = int(wait_for(lambda: (work / "mark.pids").exists() and (work / "mark.pids").read_text().split(),
                            timeout=30, what="dispatch inside sbatch")[0])
    victim = next(w for w in workers if pool_pid in w.pool_children())
    survivor = next(w for w in workers if w is not victim)
    name = f"deeprepo-{job.public_id}"
    assert len(_slurm_jobs_named(slurm_cluster, name)) == 1  # sbatch has run; its answer is pending

    os.kill(victim.proc.pid, signal.SIGKILL)  # the main process: no one is left to requeue the task
    victim.proc.wait(timeout=10)
    os.killpg(victim.proc.pid, signal.SIGKILL)  # the orphaned pool, beat and the paused sbatch die with it
    wait_for(lambda: not os.path.exists(f"/proc/{pool_pid}") or
             open(f"/proc/{pool_pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", what="pool gone")

    job.refresh_from_db()
    assert job.status == "submitting" and job.external_id == ""
    broker = redis.Redis.from_url(own_redis.url)
    assert _owed(broker, "deeprepo.jobs.dispatch") == 1  # acks_late: the dispatch message is still owed

    job = wait_job(job, "succeeded", timeout=30)
    # It really was the redelivery: Redis hands an unacknowledged message out again a visibility
    # timeout after it was first delivered (which was after the launch), not after the kill.
    assert time.monotonic() - launched_at >= VISIBILITY_TIMEOUT
    assert out.exists()
    assert _slurm_jobs_named(slurm_cluster, name) == [job.external_id]  # adopted, not submitted twice
    reasons = [e.reason for e in job.events.all()]
    assert any("interrupted" in r for r in reasons), reasons
    assert any("adopted, not submitted again" in r for r in reasons), reasons
    assert not any(r.startswith("submitted to") for r in reasons), reasons
    assert job.attempts == 1
    job.run.refresh_from_db()
    assert job.run.status == "finished"
    assert _owed(broker, "deeprepo.jobs.dispatch") == 0
    assert survivor.proc.poll() is None
