"""The worker process is SIGKILLed in the middle of a dispatch: no job is lost, none doubled.

The Slurm cluster's bin_dir points at a wrapper around the real sbatch that pauses once, so the
kill lands exactly inside backend.submit: either before sbatch ran (the job must still be
submitted, once) or after sbatch created it but before the id reached the database (the job
must be adopted, not submitted again). acks_late + reject_on_worker_lost hand the task to a new
pool process; the per-job advisory lock and the cluster lookup do the rest.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.jobs.conftest import wait_for, wait_job

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slurm]

BEFORE = """#!/bin/sh
# Pause inside submit, before the real sbatch runs (first call only).
if [ ! -e {mark}.done ]; then
  touch {mark}.done; echo "$PPID $$" > {mark}.pids; sleep 60
fi
exec {sbatch} "$@"
"""

AFTER = """#!/bin/sh
# The real sbatch first, then a pause before the id is answered (first call only).
out=$({sbatch} "$@") || exit $?
if [ ! -e {mark}.done ]; then
  touch {mark}.done; echo "$PPID $$" > {mark}.pids; sleep 60
fi
echo "$out"
"""


def _wrapped_bin(work: Path, script: str) -> Path:
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for tool in ("squeue", "scontrol", "sacct", "scancel", "sinfo"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    wrapper = bin_dir / "sbatch"
    wrapper.write_text(script.format(mark=work / "mark", sbatch=shutil.which("sbatch")))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


def _slurm_jobs_named(slurm_cluster: Any, name: str) -> list[str]:
    r = slurm_cluster.run("squeue", "-h", "--states=all", f"--name={name}", "-o", "%i")
    return r.stdout.split()


@pytest.mark.parametrize("moment", ["before_sbatch", "after_sbatch"])
def test_worker_killed_mid_submit_loses_nothing_and_doubles_nothing(
    moment: str, team: Any, slurm_cluster: Any, probe_template: Any, launch: Any, work: Path,
    celery_worker: Any,
) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    bin_dir = _wrapped_bin(work, BEFORE if moment == "before_sbatch" else AFTER)
    cluster = cluster_save(project=team.project, name="slurm-wrapped", kind="slurm", settings_in={
        "slurm_conf": str(slurm_cluster.conf), "state_dir": str(work / "state"), "bin_dir": str(bin_dir),
        "command_timeout": 90,
    })
    out = work / "p.json"
    job = launch(probe_template, cluster, {"out": str(out), "sleep": 1})
    pids = wait_for(lambda: (work / "mark.pids").exists() and (work / "mark.pids").read_text().split(),
                    timeout=30, what="dispatch inside sbatch")
    pool_pid, wrapper_pid = int(pids[0]), int(pids[1])
    assert pool_pid in celery_worker.pool_children()
    job.refresh_from_db()
    assert job.status == "submitting" and job.external_id == ""
    os.kill(pool_pid, signal.SIGKILL)  # the worker process running dispatch_job
    os.kill(wrapper_pid, signal.SIGKILL)  # and the half-done sbatch call with it

    job = wait_job(job, "succeeded", timeout=90)
    assert out.exists()
    assert _slurm_jobs_named(slurm_cluster, f"deeprepo-{job.public_id}") == [job.external_id]
    reasons = [e.reason for e in job.events.all()]
    assert any("interrupted" in r for r in reasons), reasons
    if moment == "after_sbatch":
        assert any("adopted, not submitted again" in r for r in reasons), reasons
    else:
        assert any(r.startswith("submitted to") for r in reasons), reasons
    assert celery_worker.proc.poll() is None  # the worker itself lives on
