"""Retries on node failure (a template's policy): real Slurm nodes set down, real local processes
killed with their wrapper, through the real worker and beat; every attempt on the job page."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.jobs.conftest import wait_for, wait_job

pytestmark = pytest.mark.django_db(transaction=True)

# Attempt 1 waits to be killed; a later attempt (DEEPREPO_JOB_ATTEMPT > 1) ends at once.
_COMMAND = ('touch {mark}.$DEEPREPO_JOB_ATTEMPT; if [ "$DEEPREPO_JOB_ATTEMPT" = 1 ]; then sleep 300; fi; '
            'echo attempt $DEEPREPO_JOB_ATTEMPT of run $DEEPREPO_RUN_ID done; exit {code}')


def _template(team: Any, retries: int, slug: str = "flaky") -> Any:
    from deeprepo_web.jobs.services.templates import template_save

    return template_save(project=team.project, slug=slug, name="Flaky", kind="train", command_template=_COMMAND,
                         params_schema=[{"name": "mark", "type": "str"}, {"name": "code", "type": "int",
                                                                           "default": 0, "min": 0, "max": 9}],
                         max_node_retries=retries)


def _page(client: Any, team: Any, job: Any) -> str:
    client.force_login(team.viewer)
    return client.get(f"/p/{team.project.slug}/jobs/{job.public_id}/").content.decode()


def _node(slurm_cluster: Any, state: str) -> None:
    r = slurm_cluster.run("scontrol", "update", "nodename=localhost", f"state={state}", "reason=deeprepo-test")
    assert r.returncode == 0 or "Invalid node state" in r.stderr, r.stderr  # resume of a node already back


@pytest.mark.slurm
def test_slurm_node_failure_is_retried_into_the_same_run_and_every_attempt_is_listed(
        client: Any, team: Any, slurm_cluster: Any, slurm_cluster_row: Any, launch: Any, work: Path) -> None:
    mark = work / "mark"
    job = launch(_template(team, retries=1), slurm_cluster_row, {"mark": str(mark)})
    job = wait_job(job, "running", timeout=30)
    first_id, run_id = job.external_id, job.run_id
    wait_for(lambda: Path(f"{mark}.1").exists(), what="attempt 1 started")
    # A cluster that does not requeue on node failure (JobRequeue=0 or --no-requeue): the job
    # ends NODE_FAIL when its node goes down.
    assert slurm_cluster.run("scontrol", "update", f"jobid={first_id}", "requeue=0").returncode == 0
    try:
        _node(slurm_cluster, "down")
        wait_for(lambda: (job.refresh_from_db(), job.node_retries == 1)[1], timeout=30, what="the retry")
    finally:
        _node(slurm_cluster, "resume")
    wait_for(lambda: "idle" in slurm_cluster.run("sinfo", "-h", "-o", "%T").stdout or
             "alloc" in slurm_cluster.run("sinfo", "-h", "-o", "%T").stdout, what="node back")
    job = wait_job(job, "succeeded", timeout=90)
    assert job.run_id == run_id and job.node_retries == 1 and job.external_id != first_id
    attempts = list(job.attempt_rows.order_by("number").values_list("number", "external_id", "state", "reason"))
    assert [a[:3] for a in attempts] == [(1, first_id, "failed"), (2, job.external_id, "succeeded")]
    assert attempts[0][3].startswith("NODE_FAIL: its node failed")
    assert Path(f"{mark}.2").exists()
    job.run.refresh_from_db()
    assert job.run.status == "finished"
    event = next(e for e in job.events.all() if e.to_status == "pending" and e.from_status)
    assert "attempt 1 ended by a node failure on slurm-here (NODE_FAIL" in event.reason
    assert "retry 1 of 1" in event.reason and "same run" in event.reason
    page = _page(client, team, job)
    assert 'id="job-attempts"' in page and f"<code>{first_id}</code>" in page
    assert f"<code>{job.external_id}</code>" in page and "NODE_FAIL: its node failed" in page
    assert "1 of 1 used" in page
    # A job that simply started has no reason to show (Slurm says "None"): the line says nothing.
    started = [e for e in job.events.all() if e.to_status == "running"]
    assert started and all(e.reason == "" for e in started) and "<td>None</td>" not in page


def _kill_with_wrapper(local_cluster: Any, external_id: str) -> None:
    """SIGKILL the job's whole process group, its wrapper too: no exit code is left (a lost process,
    as after an OOM killer's sweep or a machine restart)."""
    meta = json.loads((Path(local_cluster.settings["state_dir"]) / external_id / "meta.json").read_text())
    os.killpg(int(meta["pid"]), signal.SIGKILL)


def test_lost_local_process_is_retried_until_the_policy_is_used_up(
        client: Any, team: Any, local_cluster: Any, launch: Any, work: Path) -> None:
    mark = work / "mark"
    job = launch(_template(team, retries=1), local_cluster, {"mark": str(mark)})
    job = wait_job(job, "running", timeout=20)
    first_id = job.external_id
    wait_for(lambda: Path(f"{mark}.1").exists(), what="attempt 1 started")
    _kill_with_wrapper(local_cluster, first_id)
    job = wait_job(job, "succeeded", timeout=60)
    assert job.node_retries == 1 and job.external_id != first_id and job.external_id.startswith(
        f"{job.public_id}-r1-")
    rows = list(job.attempt_rows.order_by("number"))
    assert [(a.number, a.state) for a in rows] == [(1, "lost"), (2, "succeeded")]
    assert "vanished without recording an exit code" in rows[0].reason
    assert rows[0].started_at and rows[0].finished_at and rows[1].finished_at
    assert f"attempt 2 of run {job.run.public_id} done" in job.log_tail
    page = _page(client, team, job)
    assert 'id="job-attempts"' in page and "vanished without recording an exit code" in page
    # The timeline tells the two attempts' dispatches apart.
    dispatches = [e.reason for e in job.events.all() if e.to_status == "submitting"]
    assert dispatches == ["dispatch attempt 1", "dispatch attempt 1 (job attempt 2)"]


def test_no_retry_left_fails_and_says_so(team: Any, local_cluster: Any, launch: Any, work: Path) -> None:
    mark = work / "mark"
    job = launch(_template(team, retries=0, slug="flaky0"), local_cluster, {"mark": str(mark)})
    job = wait_job(job, "running", timeout=20)
    wait_for(lambda: Path(f"{mark}.1").exists(), what="attempt 1 started")
    _kill_with_wrapper(local_cluster, job.external_id)
    job = wait_job(job, "lost", timeout=30)
    assert job.node_retries == 0 and "vanished" in job.error
    assert list(job.attempt_rows.values_list("state", flat=True)) == ["lost"]


def test_program_failure_is_not_retried(team: Any, local_cluster: Any, launch: Any) -> None:
    """An exit code other than 0 is the program's own failure: the policy does not apply."""
    from deeprepo_web.jobs.services.templates import template_save

    template = template_save(project=team.project, slug="fails", name="Fails", kind="train",
                             command_template="exit {code}", params_schema=[{"name": "code", "type": "int"}],
                             max_node_retries=2)
    job = launch(template, local_cluster, {"code": 3})
    job = wait_job(job, "failed", timeout=30)
    assert job.exit_code == 3 and job.node_retries == 0
    assert list(job.attempt_rows.values_list("number", "state")) == [(1, "failed")]
    assert "no retry left" not in job.error
