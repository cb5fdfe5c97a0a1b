"""The demo job's checkpoints are evaluated by themselves, end to end: `launch_demo` (what `make run`
calls) launches the demo trainer with checkpoints and a rule on its run; a real Celery worker with
beat dispatches it on the local cluster; the trainer logs each checkpoint as an artifact through
this test's live server; beat's scan launches the demo eval template on each checkpoint's path;
the evals log into their own runs, linked at their steps, so the run page and the Checkpoints tab
fill without anyone launching anything.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from django.core.management import call_command

from deeprepo_web.checkpoint_evals.models import CheckpointEval, CheckpointRule
from deeprepo_web.jobs.models import Cluster, Job
from deeprepo_web.runs.models import MetricSeries, Run
from tests.jobs.conftest import _stop_leftovers, wait_for, wait_job

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_checkpoints_get_their_evals_launched_and_linked(
    team: Any, celery_worker: Any, live_server: Any, client: Any, capsys: Any
) -> None:
    call_command("launch_demo", url=live_server.url, project=team.project.slug, username="owner", steps=4,
                 step_sleep=0.3, checkpoint_every=2)
    assert "evaluated by themselves" in capsys.readouterr().out
    cluster = Cluster.objects.get(project=team.project, name="this machine")
    try:
        train = Job.objects.select_related("run").get(template__slug="demo-grpo")
        rule = CheckpointRule.objects.get(run=train.run)
        assert train.parameters["checkpoint_every"] == 2 and train.parameters["no_evals"] is True
        wait_job(train, "succeeded", timeout=120)

        def three_evals_done() -> bool:
            jobs = [e.job for e in CheckpointEval.objects.filter(rule=rule).select_related("job")]
            return len(jobs) == 3 and all(j is not None and j.is_final for j in jobs)

        wait_for(three_evals_done, timeout=180, what=f"3 evals of checkpoints ({celery_worker.log_text()[-1500:]})")
        evals = list(CheckpointEval.objects.filter(rule=rule).select_related("job__run").order_by("step"))
        assert [e.step for e in evals] == [0, 2, 4]
        for e in evals:
            assert e.job.status == "succeeded", e.job.log_tail[-1500:]
            assert e.path == f"{train.output_dir}/checkpoints/step-{e.step:06d}.npz"
            run = e.job.run
            assert run.parent_id == train.run.pk and run.checkpoint_step == e.step and run.kind == "eval"
            assert MetricSeries.objects.filter(run=run, key="reward").exists()
            assert run.rollouts.count() == 6 * 4  # the eval set: 6 examples x 4 rollouts
        assert Run.objects.filter(parent=train.run, checkpoint_step__isnull=False).count() == 3

        client.force_login(team.viewer)
        page = client.get(f"/p/{team.project.slug}/runs/{train.run.public_id}/").content.decode()
        assert "Evals of checkpoints" in page
        assert all(f"{train.run.name} eval @ step {s}" in page for s in (0, 2, 4))
        tab = client.get(f"/p/{team.project.slug}/runs/{train.run.public_id}/checkpoints/")
        assert tab.status_code == 200
        assert all(e.job.run.public_id in tab.content.decode() for e in evals)
    finally:
        with contextlib.suppress(Exception):
            _stop_leftovers(cluster)
