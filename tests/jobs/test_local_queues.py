"""The queues `make run`'s worker listens on: the default one and every local cluster's own."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_make_run_worker_serves_the_default_queue_and_each_local_clusters_queue(team: Any, tmp_path: Any) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    def queues() -> str:
        out = io.StringIO()
        call_command("local_queues", stdout=out)
        return out.getvalue().strip()

    assert queues() == "celery"
    cluster_save(project=team.project, name="here", kind="local", settings_in={"state_dir": str(tmp_path)})
    assert queues() == "celery"  # no queue of its own: the default one
    cluster_save(project=team.project, name="gpu-box", kind="local", settings_in={"state_dir": str(tmp_path)},
                 queue="gpu-box")
    cluster_save(project=team.project, name="twin", kind="local", settings_in={"state_dir": str(tmp_path)},
                 queue="gpu-box")
    # A Slurm cluster has a worker of its own beside it (docs/deploy.md): not this machine's business.
    cluster_save(project=team.project, name="hpc", kind="slurm", settings_in={}, queue="hpc")
    assert queues() == "celery,gpu-box"
