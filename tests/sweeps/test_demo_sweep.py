"""A grid sweep of the demo GRPO template, end to end: a real Celery worker with beat (advancing the
sweep, dispatching and following the jobs), the local cluster running the real demo trainer, which
logs into each trial's run through this test's live server. The median pruner stops the trials
that trail the first one, whose jobs are cancelled and marked pruned.
"""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.jobs.models import JobStatus
from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.sweeps.models import SweepStatus, Trial, TrialStatus
from deeprepo_web.sweeps.services import sweep_create
from tests.jobs.conftest import builtin, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_sweep_runs_to_completion_with_pruned_trials(
    team: Any, local_cluster: Any, celery_worker: Any, live_server: Any, client: Any
) -> None:
    cluster = cluster_save(project=team.project, cluster=local_cluster, name=local_cluster.name, kind="local",
                           settings_in={**local_cluster.settings, "deeprepo_url": live_server.url})
    # Seed 1 makes the grid start with lr 0.5, which out-learns the two others from step 1 on (the
    # demo is deterministic for a fixed seed): both then trail the median of complete trials.
    sweep = sweep_create(
        project=team.project, template=builtin("demo-grpo"), cluster=cluster, user=team.editor,
        specs={"lr": "0.5, 0.000001, 0.05", "steps": "8", "step_sleep": "1", "examples_per_step": "4",
               "rollouts_per_example": "4", "no_evals": "true"},
        method="grid", metric="reward", max_trials=3, max_parallel=1, pruner="median",
        warmup_steps=1, startup_trials=1, seed=1,
    )
    assert sweep.fixed["steps"] == 8 and sweep.fixed["no_evals"] is True
    assert list(sweep.space) == ["lr"]

    def finished() -> bool:
        sweep.refresh_from_db()
        return sweep.status == SweepStatus.FINISHED

    wait_for(finished, timeout=240, what=f"the sweep to finish ({celery_worker.log_text()[-2000:]})")
    trials = list(Trial.objects.filter(sweep=sweep).select_related("job", "job__run").order_by("number"))
    assert [t.params["lr"] for t in trials][0] == 0.5
    first, *rest = trials
    assert first.status == TrialStatus.COMPLETE
    assert first.value is not None and first.value == pytest.approx(first.job.run.series.get(key="reward").last_value)
    assert first.job.status == JobStatus.SUCCEEDED
    assert [t.status for t in rest] == [TrialStatus.PRUNED, TrialStatus.PRUNED]
    for t in rest:
        assert t.job is not None and t.job.status == JobStatus.CANCELLED
        assert "pruned at step" in t.note
        assert any("pruned at step" in e.reason for e in t.job.events.all())
        assert t.job.run is not None and t.job.run.status == "cancelled"
        assert t.job.run.config["sweep"]["id"] == sweep.public_id

    client.force_login(team.editor)
    page = client.get(f"/p/{team.project.slug}/sweeps/{sweep.public_id}/").content.decode()
    assert "1 complete · 2 pruned" in page
    assert page.count('class="trial-line"') == 3  # the complete one and both pruned ones
