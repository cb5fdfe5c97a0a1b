"""slurmctld dies while jobs run on Slurm and comes back CTLD_DOWN_SECONDS later.

slurmd keeps running the jobs, and they end during the outage (one succeeds, one fails). While
the controller is away the product must not guess: each job keeps its last known status
("running"), says on its page that the cluster cannot be reached, and records that once in its
timeline. When slurmctld is back (same state directory) every job reconciles to what really
happened, exit codes included, and the page says the cluster answered again.
Real parts: the test Slurm cluster, a throwaway Redis, a real worker with beat.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.jobs.conftest import wait_for, wait_job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slurm]

CTLD_DOWN_SECONDS = 30  # "down for a minute", shortened for the test
# A poll against a dead controller fails only after Slurm's own connect retries (~10 s here, seen
# ~20 s on a busy machine), so the outage shows on the job well after the stop.
JOB_SECONDS = 6  # the jobs end while the controller is down


def _page(client: Client, job: Any) -> str:
    return client.get(reverse("job", args=[job.project.slug, job.public_id])).content.decode()


def test_slurm_controller_down_then_back_reconciles_jobs(
    team: Any, slurm_cluster: Any, probe_template: Any, start_own_worker: Any, work: Path,
) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.sync import FOLLOW_ERROR

    start_own_worker(concurrency=2)
    cluster = cluster_save(project=team.project, name="slurm-here", kind="slurm", settings_in={
        "slurm_conf": str(slurm_cluster.conf), "state_dir": str(work / "slurm-state"), "command_timeout": 15,
    })

    def launch(tag: str, exit_code: int) -> Any:
        return job_launch(project=team.project, template=probe_template, cluster=cluster, user=team.editor,
                          params={"out": str(work / f"{tag}.json"), "sleep": JOB_SECONDS, "exit_code": exit_code})

    ok, bad = launch("ok", 0), launch("bad", 3)
    for job in (ok, bad):
        wait_job(job, "running", timeout=30)
    viewer = Client()
    viewer.force_login(team.viewer)

    slurm_cluster.stop_controller()
    down_at = time.monotonic()
    try:
        for job in (ok, bad):
            wait_for(lambda job=job: (job.refresh_from_db(), job.error.startswith(FOLLOW_ERROR))[1],
                     timeout=CTLD_DOWN_SECONDS - 2, what="the outage to show on the job")
            assert job.status == "running"  # the last status the cluster reported, not a guess
            assert "will keep trying" in job.error
            page = _page(viewer, job)
            # the running badge carries its pulsing dot before the word
            assert re.search(r'id="job-status">(<span class="live-dot"[^>]*></span>)?running<', page)
            assert "cannot follow the job" in page
            assert "cluster unreachable" in page  # in the timeline
        wait_for(lambda: (work / "ok.json").exists() and (work / "bad.json").exists(), timeout=15,
                 what="the jobs to run on without a controller")
        time.sleep(max(0.0, CTLD_DOWN_SECONDS - (time.monotonic() - down_at)))
        for job in (ok, bad):
            job.refresh_from_db()
            assert job.status == "running", job.status  # still no verdict while the controller is away
            # One timeline entry for the outage, however many polls failed.
            assert job.events.filter(reason__startswith="cluster unreachable").count() == 1
    finally:
        slurm_cluster.start_controller()

    ok = wait_job(ok, "succeeded", timeout=30)
    bad = wait_job(bad, "failed", timeout=30)
    assert ok.exit_code == 0 and ok.error == ""
    assert bad.exit_code == 3 and "code 3" in bad.error
    for job in (ok, bad):
        reasons = [e.reason for e in job.events.all()]
        assert sum(r.startswith("cluster reachable again") for r in reasons) == 1, reasons
        assert not any(e.to_status == "lost" for e in job.events.all())
        job.run.refresh_from_db()
    assert (ok.run.status, bad.run.status) == ("finished", "failed")
    page = _page(viewer, bad)
    assert 'id="job-status">failed<' in page and "cannot follow the job" not in page
    assert "cluster reachable again" in page
