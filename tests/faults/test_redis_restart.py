"""Redis (the Celery broker) crashes and comes back empty while jobs are being launched and
dispatched: every job still runs exactly once and reaches its final state.

Real parts: a throwaway redis-server without persistence (kill -9 loses every queued and
unacked message), a real worker with beat on it, the local cluster. Jobs launched while the
broker is away must not fail the launch (the row is committed before the enqueue) and must
not be lost: beat's sync re-sends dispatch for jobs left pending. Each job's command appends
one line to its own marker file, so a double submit shows as two lines.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.jobs.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

RUNNING_JOBS = 3  # dispatched and running when Redis dies (their follow-up messages die with it)
QUEUED_JOBS = 3  # their dispatch messages sit in Redis when it dies: lost
OFFLINE_JOBS = 3  # launched while Redis is down: the enqueue itself fails
STALE_SECONDS = 3  # DEEPREPO_JOB_STALE_DISPATCH_SECONDS for the worker: re-send lost dispatches soon


def _marker_template(team: Any) -> Any:
    from deeprepo_web.jobs.services.templates import template_save

    return template_save(
        project=team.project, slug="marker", name="Marker", kind="train",
        command_template="echo {tag} >> {out}; sleep {sleep}",
        params_schema=[{"name": "tag", "type": "str"}, {"name": "out", "type": "str"},
                       {"name": "sleep", "type": "float", "default": 0.5, "min": 0, "max": 60}],
    )


def test_redis_restart_while_dispatching_loses_and_doubles_nothing(
    team: Any, own_redis: Any, start_own_worker: Any, local_cluster: Any, work: Path,
) -> None:
    from deeprepo_web.jobs.models import FINAL_JOB_STATUSES, Job
    from deeprepo_web.jobs.services.launch import job_launch

    worker = start_own_worker(concurrency=2, DEEPREPO_JOB_STALE_DISPATCH_SECONDS=str(STALE_SECONDS))
    template = _marker_template(team)
    markers = work / "markers"
    markers.mkdir()

    def launch(i: int, sleep: float = 0.5) -> Any:
        return job_launch(project=team.project, template=template, cluster=local_cluster, user=team.editor,
                          params={"tag": f"job-{i}", "out": str(markers / f"{i}.txt"), "sleep": sleep})

    jobs = [launch(i, sleep=4) for i in range(RUNNING_JOBS)]
    wait_for(lambda: all((markers / f"{i}.txt").exists() for i in range(RUNNING_JOBS)), timeout=30,
             what="the first jobs to start")
    # Freeze the worker (all its processes) so the next dispatch messages stay queued in Redis.
    os.killpg(worker.proc.pid, signal.SIGSTOP)
    try:
        jobs += [launch(RUNNING_JOBS + i) for i in range(QUEUED_JOBS)]
        broker = redis.Redis.from_url(own_redis.url)
        # The frozen worker's pending BRPOP may still take one (Redis pops it into the socket).
        queued = broker.llen("celery")
        assert queued >= QUEUED_JOBS - 1, queued
        own_redis.kill()  # kill -9, no persistence: the queued messages are gone
        assert not own_redis.ping()
        t0 = time.monotonic()
        jobs += [launch(RUNNING_JOBS + QUEUED_JOBS + i) for i in range(OFFLINE_JOBS)]  # must not raise
        assert time.monotonic() - t0 < 15, "launching while the broker is away must not hang"
        for job in jobs[RUNNING_JOBS + QUEUED_JOBS:]:
            job.refresh_from_db()
            assert job.status == "pending"
            assert "task queue is unreachable" in job.events.last().reason
    finally:
        os.killpg(worker.proc.pid, signal.SIGCONT)
    time.sleep(1)  # the worker now finds its broker connection dead
    own_redis.start()  # same port, empty

    ids = [j.pk for j in jobs]

    def all_final() -> bool:
        return Job.objects.filter(pk__in=ids, status__in=FINAL_JOB_STATUSES).count() == len(ids)

    try:
        wait_for(all_final, timeout=60, what="every job final")
    except AssertionError:
        states = list(Job.objects.filter(pk__in=ids).values_list("public_id", "status", "error"))
        raise AssertionError(f"{states}\n{worker.log_text()[-4000:]}") from None
    resent_queued = 0
    for i, job in enumerate(jobs):
        job.refresh_from_db()
        assert job.status == "succeeded", (job.public_id, job.status, job.error)
        # Exactly one run of the command: one line in its marker, one job directory on the cluster.
        assert (markers / f"{i}.txt").read_text().splitlines() == [f"job-{i}"]
        assert len(list((work / "local-jobs").glob(f"{job.public_id}-*"))) == 1
        job.run.refresh_from_db()
        assert job.run.status == "finished"
        resent = job.events.filter(reason__startswith="dispatch sent again").exists()
        if i < RUNNING_JOBS or i >= RUNNING_JOBS + QUEUED_JOBS:
            assert resent == (i >= RUNNING_JOBS), (i, [e.reason for e in job.events.all()])
        else:
            resent_queued += resent
    assert resent_queued >= queued  # every message lost with the queue was sent again
    assert worker.proc.poll() is None  # the worker rode out the outage
