"""The ART job template on the local cluster, through a real Celery worker: `deeprepo watch` runs
beside the training script and fills the job's own run as steps are written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.jobs.conftest import builtin, wait_for, wait_job

pytestmark = pytest.mark.django_db(transaction=True)
REPLAY = Path(__file__).with_name("art_replay.py")


def test_art_template_fills_the_jobs_run(team: Any, launch: Any, work: Path, live_server: Any, samples: Path) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.runs.models import MetricSeries, Rollout, Run

    cluster = cluster_save(project=team.project, name="here", kind="local", settings_in={
        "state_dir": str(work / "local-jobs"), "kill_grace_s": 2, "workdir": str(Path(__file__).parents[2]),
        "output_root": str(work / "outputs"), "deeprepo_url": live_server.url,
    })
    model = samples / "art" / "art-email-demo" / "models" / "email-agent-001"
    job = launch(builtin("art"), cluster, {"script": str(REPLAY), "script_args": str(model), "watch_interval": 1})
    # while the script still trains (3 s a step), the first step is already in the job's run
    wait_for(lambda: Rollout.objects.filter(run_id=job.run_id).count() >= 8, timeout=60, what="step 1 streamed")
    job.refresh_from_db()
    assert job.status == "running"
    job = wait_job(job, {"succeeded", "failed"}, timeout=120)
    assert job.status == "succeeded", (job.error, job.log_tail)
    run = Run.objects.get(pk=job.run_id)
    assert Rollout.objects.filter(run=run).count() == 24
    assert MetricSeries.objects.filter(run=run, key="train/reward").exists()
    evals = Run.objects.filter(project=team.project, kind="eval", source="art")
    assert sorted(e.checkpoint_step for e in evals) == [1, 2, 3] and {e.parent_id for e in evals} == {run.pk}
    assert Run.objects.filter(project=team.project).count() == 4  # the job's run and three val runs
