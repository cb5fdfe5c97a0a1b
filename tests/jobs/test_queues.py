"""A queue per cluster: two real Celery workers, each started beside its own cluster and able to
reach only that one, take exactly their cluster's dispatch, sync and log reads.

Worker A listens on "slurm-a" and has the Slurm client configured (SLURM_CONF in its
environment, as on a login node); its HTTP goes through a proxy that does not exist, so it
cannot reach the Ray head. Worker B listens on "ray-b" and has no Slurm configured. A job routed
to the wrong worker would fail; both must succeed, each dispatched by its own worker. The session
worker (default queue, with beat) sends each cluster its sync on the cluster's queue.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra._proc import free_port
from tests.jobs.conftest import wait_for, wait_job
from tests.jobs.worker import Worker, start_worker, stop_worker, wait_listening

# Three workers, a Slurm and a Ray head start here: minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slurm, pytest.mark.ray,
              pytest.mark.timeout(900)]


def _worker(celery_worker: Worker, queue: str, env: dict[str, str]) -> Worker:
    from django.conf import settings

    return start_worker(str(settings.DATABASES["default"]["NAME"]), settings.SECRET_KEY, concurrency=2,
                        broker_url=celery_worker.broker_url, flush=False, beat=False, queues=(queue,),
                        name=queue, extra_env=env)


@pytest.fixture(scope="module")
def _started(celery_worker: Worker, slurm_cluster: Any, ray_head: Any) -> Iterator[tuple[Worker, Worker]]:
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    a = _worker(celery_worker, "slurm-a", {
        "SLURM_CONF": str(slurm_cluster.conf), "HTTP_PROXY": dead_proxy, "http_proxy": dead_proxy,
        "NO_PROXY": "", "no_proxy": ""})
    b = _worker(celery_worker, "ray-b", {"SLURM_CONF": "/nonexistent/slurm.conf"})
    try:
        # Each really reaches only its own cluster.
        assert subprocess.run(["sinfo"], env=a.env, capture_output=True).returncode == 0
        assert subprocess.run(["sinfo"], env=b.env, capture_output=True).returncode != 0
        with pytest.raises(httpx.ConnectError):
            httpx.Client(proxy=dead_proxy).get(f"{ray_head.address}/api/version", timeout=5)
        yield a, b
    finally:
        stop_worker(a)
        stop_worker(b)


@pytest.fixture
def queue_workers(_started: tuple[Worker, Worker], transactional_db: Any) -> tuple[Worker, Worker]:
    for worker in _started:
        wait_listening(worker)
    return _started


def _clusters(team: Any, work: Path, ray_head: Any) -> tuple[Any, Any]:
    from deeprepo_web.jobs.services.clusters import cluster_save

    # No slurm_conf setting: the worker's own Slurm client configuration decides where sbatch goes.
    slurm = cluster_save(project=team.project, name="slurm-a", kind="slurm", queue="slurm-a", settings_in={
        "state_dir": str(work / "slurm-state"), "workdir": str(work), "command_timeout": 15})
    ray = cluster_save(project=team.project, name="ray-b", kind="ray", queue="ray-b",
                       settings_in={"address": ray_head.address, "workdir": str(work)})
    return slurm, ray


def _worker_of(job: Any) -> str:
    submitted = [e.reason for e in job.events.all() if e.to_status == "queued" and e.from_status == "submitting"]
    assert len(submitted) == 1, submitted
    return submitted[0].rsplit(" by worker ", 1)[-1]


def test_each_cluster_runs_its_jobs_on_the_worker_beside_it(
        team: Any, queue_workers: tuple[Worker, Worker], ray_head: Any, probe_template: Any, launch: Any,
        work: Path) -> None:
    a, b = queue_workers
    slurm, ray = _clusters(team, work, ray_head)
    on_slurm = launch(probe_template, slurm, {"out": str(work / "s.json"), "sleep": 2})
    on_ray = launch(probe_template, ray, {"out": str(work / "r.json"), "sleep": 2}, resources={"cpus": 1})
    on_slurm = wait_job(on_slurm, "succeeded", timeout=90)
    on_ray = wait_job(on_ray, "succeeded", timeout=240)
    assert _worker_of(on_slurm) == a.hostname and _worker_of(on_ray) == b.hostname
    assert on_slurm.error == "" and on_ray.error == ""
    # Followed to the end and its log read there: only worker A can run squeue / read its files.
    assert "probe done" in on_slurm.log_tail and "probe done" in on_ray.log_tail
    assert "deeprepo.jobs.sync_cluster" in a.log_text() and "deeprepo.jobs.sync_cluster" in b.log_text()


def test_clusters_page_says_which_queues_have_a_worker(client: Any, team: Any, queue_workers: Any,
                                                       ray_head: Any, work: Path) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    _clusters(team, work, ray_head)
    cluster_save(project=team.project, name="nobody", kind="local", queue="nobody-listens",
                 settings_in={"state_dir": str(work / "local")})
    client.force_login(team.viewer)
    page = client.get(f"/p/{team.project.slug}/clusters/").content.decode()
    rows = {name: page.split(f">{name}<", 1)[1].split("</tr>", 1)[0] for name in ("slurm-a", "ray-b", "nobody")}
    assert "listening" in rows["slurm-a"] and queue_workers[0].hostname in rows["slurm-a"]
    assert "listening" in rows["ray-b"] and queue_workers[1].hostname in rows["ray-b"]
    assert "no worker" in rows["nobody"] and "-Q nobody-listens" in rows["nobody"]


def test_job_for_a_queue_without_worker_waits_then_runs_when_one_starts(
        client: Any, team: Any, celery_worker: Worker, probe_template: Any, launch: Any, work: Path) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    cluster = cluster_save(project=team.project, name="late", kind="local", queue="late-c", settings_in={
        "state_dir": str(work / "local-jobs"), "workdir": str(work)})
    out = work / "p.json"
    job = launch(probe_template, cluster, {"out": str(out)})
    job.refresh_from_db()
    assert job.status == "pending"
    assert job.error == "waiting for a worker on late (no worker listens on queue 'late-c')"
    client.force_login(team.viewer)
    page = client.get(f"/p/{team.project.slug}/jobs/{job.public_id}/").content.decode()
    assert "waiting for a worker on late" in page
    # Beat's passes meanwhile neither lose it nor mark it lost, and do not send it again.
    passes = celery_worker.log_text().count("deeprepo.jobs.sync[")
    wait_for(lambda: celery_worker.log_text().count("deeprepo.jobs.sync[") > passes + 2, what="beat sync passes")
    job.refresh_from_db()
    assert job.status == "pending" and job.error.startswith("waiting for a worker on late")

    late = _worker(celery_worker, "late-c", {})
    try:
        job = wait_job(job, "succeeded", timeout=60)
    finally:
        stop_worker(late)
    assert job.error == "" and out.exists()
    assert _worker_of(job) == late.hostname
    reasons = [e.reason for e in job.events.all()]
    assert sum("waiting for a worker on late" in r for r in reasons) == 1, reasons
    assert not any("sent again" in r for r in reasons), reasons
