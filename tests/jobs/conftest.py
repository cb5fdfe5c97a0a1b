from __future__ import annotations

import contextlib
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.backends.helpers import PROBE, PYTHON, shared_dir
from tests.infra.fixtures import slurm_cluster, sshd_server  # noqa: F401  (fixtures; ray_head is session-wide, in tests/conftest.py)
from tests.jobs.worker import REPO, Worker, wait_listening


@pytest.fixture
def work() -> Iterator[Path]:
    """A per-test directory writable by root and the SSH test user."""
    base = shared_dir(Path(tempfile.mkdtemp(prefix="deeprepo-jt-")))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def wait_job(job: Any, statuses: set[str] | str, timeout: float = 60) -> Any:
    """Poll the database until the job reaches one of `statuses`; return it fresh."""
    wanted = {statuses} if isinstance(statuses, str) else set(statuses)
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while True:
        job.refresh_from_db()
        if not seen or seen[-1] != job.status:
            seen.append(job.status)
        if job.status in wanted:
            return job
        if time.monotonic() > deadline:
            events = [(e.from_status, e.to_status, e.reason) for e in job.events.all()]
            raise AssertionError(f"job never reached {wanted}; saw {seen}; error {job.error!r}; events {events}")
        time.sleep(0.2)


def wait_for(check: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture
def probe_template(team: Any) -> Any:
    """A project template running the backend tests' probe with two text parameters."""
    from deeprepo_web.jobs.services.templates import template_save

    return template_save(
        project=team.project, slug="probe", name="Probe", kind="train",
        command_template=(f"PROBE_OUT={{out}} PROBE_SLEEP={{sleep}} PROBE_EXIT={{exit_code}} "
                          f"{PYTHON} {PROBE} {{first}} {{second}} --n {{n}}"),
        params_schema=[
            {"name": "out", "type": "str", "required": True},
            {"name": "sleep", "type": "float", "default": 0, "min": 0, "max": 600},
            {"name": "exit_code", "type": "int", "default": 0, "min": 0, "max": 255},
            {"name": "first", "type": "text"},
            {"name": "second", "type": "str"},
            {"name": "n", "type": "int", "default": 1, "min": 0, "max": 10},
        ],
    )


@pytest.fixture
def local_cluster(team: Any, work: Path) -> Iterator[Any]:
    from deeprepo_web.jobs.services.clusters import cluster_save

    cluster = cluster_save(project=team.project, name="here", kind="local", settings_in={
        "state_dir": str(work / "local-jobs"), "kill_grace_s": 2, "workdir": str(REPO),
        "output_root": str(work / "outputs"),
    })
    yield cluster
    _stop_leftovers(cluster)


@pytest.fixture
def slurm_cluster_row(team: Any, work: Path, slurm_cluster: Any) -> Iterator[Any]:  # noqa: F811
    from deeprepo_web.jobs.services.clusters import cluster_save

    cluster = cluster_save(project=team.project, name="slurm-here", kind="slurm", settings_in={
        "slurm_conf": str(slurm_cluster.conf), "state_dir": str(work / "slurm-state"), "command_timeout": 15,
        "workdir": str(work),
    })
    yield cluster
    _stop_leftovers(cluster)


def ssh_settings(server: Any, cluster: Any, **over: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "host": server.host, "port": server.port, "user": server.user, "known_hosts": server.known_hosts,
        "slurm_conf": str(cluster.conf), "connect_timeout": 5, "command_timeout": 15,
        "state_dir": f".deeprepo/jt-{secrets.token_hex(4)}",
    }
    settings.update(over)
    return settings


def _stop_leftovers(cluster: Any) -> None:
    """Cancel what a failed test left running on the cluster, before the rows are flushed."""
    from deeprepo_web.jobs.models import FINAL_JOB_STATUSES, Job
    from deeprepo_web.jobs.services.clusters import backend_for_cluster

    with contextlib.suppress(Exception):
        left = list(Job.objects.filter(cluster=cluster).exclude(status__in=FINAL_JOB_STATUSES)
                    .exclude(external_id="").values_list("external_id", flat=True))
        if left:
            with backend_for_cluster(cluster) as backend:
                for external_id in left:
                    with contextlib.suppress(Exception):
                        backend.cancel(external_id)


@pytest.fixture
def launch(team: Any, celery_worker: Worker) -> Callable[..., Any]:
    """job_launch as the editor, committed, so the real worker picks it up."""
    from deeprepo_web.jobs.services.launch import job_launch

    wait_listening(celery_worker)

    def go(template: Any, cluster: Any, params: dict[str, Any], **kw: Any) -> Any:
        return job_launch(project=team.project, template=template, cluster=cluster, params=params,
                          user=team.editor, **kw)

    return go


def builtin(slug: str) -> Any:
    from deeprepo_web.jobs.models import JobTemplate
    from deeprepo_web.jobs.services.templates import builtin_templates_ensure

    builtin_templates_ensure()
    return JobTemplate.objects.get(project__isnull=True, slug=slug)
