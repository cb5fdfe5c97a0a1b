"""Jobs on real Slurm (local and over SSH) and a local Ray head, through the real worker."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import paramiko
import pytest

from tests.backends.helpers import PROBE, PYTHON, hostile_values
from tests.infra._proc import free_port
from tests.jobs.conftest import ssh_settings, wait_for, wait_job

pytestmark = pytest.mark.django_db(transaction=True)


def _hostile_template(team: Any, values: list[str]) -> Any:
    from deeprepo_web.jobs.services.templates import template_save

    names = [f"h{i}" for i in range(len(values))]
    return template_save(
        project=team.project, slug="hostile", name="Hostile", kind="train",
        command_template="PROBE_OUT={out} " + f"{PYTHON} {PROBE} " + " ".join(f"{{{n}}}" for n in names),
        params_schema=[{"name": "out", "type": "str"}] + [{"name": n, "type": "text"} for n in names],
    )


# ---------------------------------------------------------------- Slurm on this machine

@pytest.mark.slurm
def test_slurm_job_runs_to_success(slurm_cluster_row: Any, probe_template: Any, launch: Any, work: Path) -> None:
    out = work / "p.json"
    job = launch(probe_template, slurm_cluster_row, {"out": str(out), "sleep": 2, "first": "a b"})
    job = wait_job(job, "running", timeout=30)
    assert job.external_id.isdigit()
    job = wait_job(job, "succeeded", timeout=60)
    assert job.exit_code == 0
    assert json.loads(out.read_text())["argv"] == ["a b", "", "--n", "1"]
    wait_for(lambda: (job.refresh_from_db(), "probe done" in job.log_tail)[1], what="log tail")
    job.run.refresh_from_db()
    assert job.run.status == "finished"


@pytest.mark.slurm
def test_slurm_failure_keeps_exit_code_and_log_tail(slurm_cluster_row: Any, probe_template: Any, launch: Any,
                                                    work: Path) -> None:
    job = launch(probe_template, slurm_cluster_row, {"out": str(work / "p.json"), "exit_code": 7})
    job = wait_job(job, "failed", timeout=60)
    assert job.exit_code == 7 and "code 7" in job.error
    assert "probe stderr line" in job.log_tail


@pytest.mark.slurm
def test_slurm_cancel(team: Any, slurm_cluster_row: Any, probe_template: Any, launch: Any, work: Path) -> None:
    from deeprepo_web.jobs.services.launch import job_cancel

    out = work / "p.json"
    job = launch(probe_template, slurm_cluster_row, {"out": str(out), "sleep": 120})
    wait_job(job, "running", timeout=30)
    wait_for(out.exists, what="probe started")
    job_cancel(job=job, user=team.editor)
    job = wait_job(job, "cancelled", timeout=30)
    job.run.refresh_from_db()
    assert job.run.status == "cancelled"


@pytest.mark.slurm
def test_slurm_scancel_by_hand_is_noticed(slurm_cluster: Any, slurm_cluster_row: Any, probe_template: Any,
                                          launch: Any, work: Path) -> None:
    out = work / "p.json"
    job = launch(probe_template, slurm_cluster_row, {"out": str(out), "sleep": 120})
    job = wait_job(job, "running", timeout=30)
    wait_for(out.exists, what="probe started")
    assert slurm_cluster.run("scancel", job.external_id).returncode == 0
    job = wait_job(job, "cancelled", timeout=30)
    assert "outside deeprepo" in job.events.last().reason


@pytest.mark.slurm
def test_slurm_hostile_parameters_arrive_as_inert_data(team: Any, slurm_cluster_row: Any, launch: Any,
                                                       work: Path) -> None:
    canary, out = work / "canary", work / "p.json"
    values = hostile_values(canary)
    template = _hostile_template(team, values)
    params = {"out": str(out), **{f"h{i}": v for i, v in enumerate(values)}}
    job = launch(template, slurm_cluster_row, params, name="; rm -rf ~ $(touch x)")
    wait_job(job, "succeeded", timeout=60)
    assert json.loads(out.read_text())["argv"] == values
    assert not canary.exists()


@pytest.mark.slurm
def test_slurm_resources_reach_sbatch(slurm_cluster_row: Any, probe_template: Any, launch: Any,
                                      slurm_cluster: Any, work: Path) -> None:
    job = launch(probe_template, slurm_cluster_row, {"out": str(work / "p.json"), "sleep": 30},
                 resources={"partition": "debug", "time_limit": "5", "cpus": 1})
    job = wait_job(job, "running", timeout=30)
    shown = slurm_cluster.run("scontrol", "show", "job", job.external_id).stdout
    assert "Partition=debug" in shown and "TimeLimit=00:05:00" in shown


# ---------------------------------------------------------------- Slurm over SSH

def _ssh_cluster(team: Any, server: Any, slurm: Any, name: str = "login", key: str | None = None,
                 **over: Any) -> Any:
    from deeprepo_web.jobs.services.clusters import cluster_save

    return cluster_save(project=team.project, name=name, kind="slurm",
                        settings_in=ssh_settings(server, slurm, **over),
                        secrets_in={"private_key": key or server.user_key})


@pytest.mark.slurm
def test_slurm_over_ssh_job_runs_as_the_login_user(team: Any, sshd_server: Any, slurm_cluster: Any,
                                                   probe_template: Any, launch: Any, work: Path) -> None:
    import pwd

    cluster = _ssh_cluster(team, sshd_server, slurm_cluster)
    out = work / "p.json"
    job = launch(probe_template, cluster, {"out": str(out), "first": "$(id)", "sleep": 1})
    job = wait_job(job, "succeeded", timeout=60)
    record = json.loads(out.read_text())
    assert record["argv"][0] == "$(id)"
    assert record["uid"] == pwd.getpwnam(sshd_server.user).pw_uid
    assert "probe done" in job.log_tail


@pytest.mark.slurm
def test_wrong_host_key_fails_the_job_with_the_reason(team: Any, sshd_server: Any, slurm_cluster: Any,
                                                      probe_template: Any, launch: Any, work: Path) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_test

    # A real key, but not the server's: what a man-in-the-middle (or a reinstalled node) looks like.
    other = paramiko.Ed25519Key.from_private_key(io.StringIO(sshd_server.user_key))
    known = f"[{sshd_server.host}]:{sshd_server.port} ssh-ed25519 {other.get_base64()}\n"
    cluster = _ssh_cluster(team, sshd_server, slurm_cluster, known_hosts=known)
    ok, message = cluster_test(cluster=cluster)
    assert not ok and "does not match known_hosts" in message
    job = launch(probe_template, cluster, {"out": str(work / "p.json")})
    job = wait_job(job, "failed", timeout=30)
    assert "does not match known_hosts" in job.error
    assert job.attempts == 1  # permanent: no retries
    assert not (work / "p.json").exists()


@pytest.mark.slurm
def test_unreachable_cluster_retries_then_fails_with_the_reason(team: Any, sshd_server: Any, slurm_cluster: Any,
                                                                probe_template: Any, launch: Any,
                                                                work: Path) -> None:
    port = free_port()  # nothing listens there
    cluster = _ssh_cluster(team, sshd_server, slurm_cluster, port=port,
                           known_hosts=f"[127.0.0.1]:{port} {sshd_server.host_public_key}\n")
    job = launch(probe_template, cluster, {"out": str(work / "p.json")})
    job = wait_job(job, "failed", timeout=60)
    assert job.attempts == 3  # DEEPREPO_JOB_DISPATCH_ATTEMPTS in the test worker
    assert "gave up after 3 attempts" in job.error and "cannot reach SSH login node" in job.error
    retries = [e.reason for e in job.events.all() if e.to_status == "pending" and e.from_status == "submitting"]
    assert len(retries) == 2 and all("retrying in" in r for r in retries)
    job.run.refresh_from_db()
    assert job.run.status == "failed"


# ---------------------------------------------------------------- Ray

@pytest.mark.ray
def test_ray_job_runs_to_success(team: Any, ray_head: Any, probe_template: Any, launch: Any, work: Path) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    cluster = cluster_save(project=team.project, name="ray", kind="ray",
                           settings_in={"address": ray_head.address, "workdir": str(work)})
    out = work / "p.json"
    job = launch(probe_template, cluster, {"out": str(out), "first": "`id`", "sleep": 1},
                 resources={"cpus": 1})
    job = wait_job(job, "succeeded", timeout=90)
    assert job.external_id == f"deeprepo-{job.public_id}"
    record = json.loads(out.read_text())
    assert record["argv"][0] == "`id`" and record["cwd"] == str(work)
    assert record["env"]["DEEPREPO_RUN_ID"] == job.run.public_id
    assert "probe done" in job.log_tail


@pytest.mark.ray
def test_ray_cancel(team: Any, ray_head: Any, probe_template: Any, launch: Any, work: Path) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.launch import job_cancel

    cluster = cluster_save(project=team.project, name="ray", kind="ray", settings_in={"address": ray_head.address})
    out = work / "p.json"
    job = launch(probe_template, cluster, {"out": str(out), "sleep": 120})
    wait_job(job, "running", timeout=90)
    wait_for(out.exists, timeout=60, what="probe started")
    job_cancel(job=job, user=team.editor)
    wait_job(job, "cancelled", timeout=60)




@pytest.mark.slurm
def test_slurm_resources_the_cluster_lacks_fail_before_submit(slurm_cluster_row: Any, probe_template: Any,
                                                              launch: Any, work: Path) -> None:
    job = launch(probe_template, slurm_cluster_row, {"out": str(work / "p.json")},
                 resources={"partition": "debug", "gpus": 2})
    job = wait_job(job, "failed", timeout=60)
    assert job.error == "2 GPUs per node asked, but no node of partition 'debug' has more than 0 (sinfo GRES)"
    assert job.external_id == "" and job.attempts == 1  # permanent: never submitted, never retried
    assert not (work / "p.json").exists()


@pytest.mark.slurm
def test_slurm_requeue_is_shown_with_its_reason_and_continues_into_the_same_run(
        client: Any, team: Any, slurm_cluster: Any, slurm_cluster_row: Any, probe_template: Any, launch: Any,
        work: Path, live_server: Any, browser_page: Any, screenshot_dir: str) -> None:
    from deeprepo_web.jobs.services.launch import job_cancel

    out = work / "p.json"
    job = launch(probe_template, slurm_cluster_row, {"out": str(out), "sleep": 300})
    job = wait_job(job, "running", timeout=30)
    run_id, external_id = job.run_id, job.external_id
    wait_for(out.exists, what="probe started")
    # What preemption or a node failure does to a requeueable job, done by hand.
    assert slurm_cluster.run("scontrol", "requeue", external_id).returncode == 0
    job = wait_job(job, "requeued", timeout=30)
    event = [e for e in job.events.all() if e.to_status == "requeued"][-1]
    assert event.from_status == "running"
    assert event.reason.startswith("requeued by slurm-here (") and "restart 1" in event.reason
    assert job.requeues == 1 and job.external_id == external_id and job.run_id == run_id
    client.force_login(team.viewer)
    page = client.get(f"/p/{team.project.slug}/jobs/{job.public_id}/").content.decode()
    assert 'id="job-status">requeued<' in page and "1 time by the cluster" in page
    shown = browser_page(team.viewer)
    shown.goto(f"{live_server.url}/p/{team.project.slug}/jobs/{job.public_id}/")
    assert shown.locator("#job-status").inner_text() == "requeued"
    shown.screenshot(path=os.path.join(screenshot_dir, "job-requeued.png"), full_page=True)
    job.run.refresh_from_db()
    assert job.run.status == "running"  # the run waits for the program to come back, not finished
    job_cancel(job=job, user=team.editor)  # cancel works from requeued too
    job = wait_job(job, "cancelled", timeout=60)
    job.run.refresh_from_db()
    assert job.run.status == "cancelled" and job.run_id == run_id
