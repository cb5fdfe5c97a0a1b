"""sweep_advance against real rows: trials follow their jobs, the pruner stops a bad one, limits hold.

No worker here: the jobs' cluster side is played by moving Job rows the way sync does (the test
with a real worker and the demo program is test_demo_sweep.py), and metrics go through the real
ingest service.
"""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.jobs.models import Job, JobStatus
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.sweeps.models import Sweep, SweepStatus, Trial, TrialStatus
from deeprepo_web.sweeps.services import sweep_advance, sweep_cancel, sweep_create
from tests.jobs.conftest import builtin

pytestmark = pytest.mark.django_db


def _curve(job: Job, values: list[float]) -> None:
    assert job.run is not None
    metrics_ingest(run=job.run, points=[{"step": i, "values": {"reward": v}} for i, v in enumerate(values)])


def _job_moves(job: Job, status: str) -> None:
    Job.objects.filter(pk=job.pk).update(status=status)


def _sweep(team: Any, cluster: Any, **kw: Any) -> Sweep:
    args: dict[str, Any] = {"specs": {"lr": "0.01, 0.1, 0.3"}, "method": "grid", "metric": "reward",
                            "max_trials": 10, "max_parallel": 2, "pruner": "median", "startup_trials": 1,
                            "fixed": {"steps": 5}}
    args.update(kw)
    return sweep_create(project=team.project, template=builtin("demo-grpo"), cluster=cluster, user=team.owner, **args)


def test_grid_sweep_runs_its_points_prunes_the_bad_one_and_finishes(team: Any, local_cluster: Any) -> None:
    sweep = _sweep(team, local_cluster)
    assert sweep.max_trials == 3  # a grid of 3 points runs 3 trials, whatever max_trials said
    assert sweep.note == "the grid has 3 points: 3 trials, not the 10 asked"
    sweep_advance(sweep_id=sweep.pk)
    trials = list(Trial.objects.filter(sweep=sweep).select_related("job"))
    assert [t.status for t in trials] == ["queued", "queued"]  # max in parallel
    assert {t.job.parameters["steps"] for t in trials} == {5}
    lrs = {t.params["lr"] for t in trials}
    assert len(lrs) == 2 and lrs <= {0.01, 0.1, 0.3}
    assert trials[0].job.run.config["sweep"]["id"] == sweep.public_id

    good, bad = trials
    _job_moves(good.job, JobStatus.RUNNING)
    _curve(good.job, [0.1, 0.3, 0.5, 0.7, 0.9])
    _job_moves(good.job, JobStatus.SUCCEEDED)
    sweep_advance(sweep_id=sweep.pk)
    good.refresh_from_db()
    assert good.status == TrialStatus.COMPLETE and good.value == pytest.approx(0.9)
    third = Trial.objects.get(sweep=sweep, number=2)  # a freed slot is filled at once
    assert third.params["lr"] not in lrs

    _job_moves(bad.job, JobStatus.RUNNING)
    _curve(bad.job, [0.0, 0.0, 0.0, 0.0])
    counts = sweep_advance(sweep_id=sweep.pk)
    bad.refresh_from_db()
    assert counts["pruned"] == 1
    assert bad.status == TrialStatus.PRUNED and "pruned at step 3" in bad.note
    bad.job.refresh_from_db()
    assert bad.job.status == JobStatus.CANCELLING  # the pruned trial's job is being cancelled
    assert "pruned at step 3" in bad.job.events.last().reason or any(
        "pruned" in e.reason for e in bad.job.events.all())

    _job_moves(third.job, JobStatus.FAILED)
    sweep_advance(sweep_id=sweep.pk)
    sweep.refresh_from_db()
    third.refresh_from_db()
    assert third.status == TrialStatus.FAILED
    assert sweep.status == SweepStatus.RUNNING  # the pruned trial's job is still being cancelled
    _job_moves(bad.job, JobStatus.CANCELLED)
    sweep_advance(sweep_id=sweep.pk)
    sweep.refresh_from_db()
    bad.refresh_from_db()
    assert bad.status == TrialStatus.PRUNED  # stays pruned, not "cancelled"
    assert sweep.status == SweepStatus.FINISHED
    assert Trial.objects.filter(sweep=sweep).count() == 3


def test_tpe_and_random_sweeps_ask_distinct_points_in_the_range(team: Any, local_cluster: Any) -> None:
    for method in ("random", "tpe"):
        sweep = _sweep(team, local_cluster, specs={"lr": "0.001 .. 0.5 log", "seed": "0 .. 1000"},
                       method=method, max_trials=6, max_parallel=6, pruner="halving")
        sweep_advance(sweep_id=sweep.pk)
        trials = list(Trial.objects.filter(sweep=sweep))
        assert len(trials) == 6
        points = {(t.params["lr"], t.params["seed"]) for t in trials}
        assert len(points) == 6
        assert all(0.001 <= lr <= 0.5 and 0 <= s <= 1000 for lr, s in points)
        assert all(isinstance(s, int) for _, s in points)


def test_cancel_all_cancels_every_open_trial_and_launches_no_more(team: Any, local_cluster: Any) -> None:
    sweep = _sweep(team, local_cluster, max_parallel=2)
    sweep_advance(sweep_id=sweep.pk)
    n = sweep_cancel(sweep=sweep, user=team.owner)
    assert n == 2
    assert set(Trial.objects.filter(sweep=sweep).values_list("status", flat=True)) == {"cancelled"}
    # Never submitted: their jobs are cancelled on the spot.
    assert set(Job.objects.filter(sweep_trial__sweep=sweep).values_list("status", flat=True)) == {"cancelled"}
    sweep_advance(sweep_id=sweep.pk)
    assert Trial.objects.filter(sweep=sweep).count() == 2
    sweep.refresh_from_db()
    assert sweep.status == SweepStatus.CANCELLED


def test_trials_launch_in_bulk_with_a_fixed_number_of_queries(team: Any, local_cluster: Any) -> None:
    """200 trials queue in seconds: a chunk's runs, jobs and events go in one INSERT each, so the
    queries of an advance do not grow with the trials it launches."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for n in (5, 50):
        sweep = _sweep(team, local_cluster, method="random", specs={"lr": "0.001 .. 0.5 log"}, max_trials=n,
                       max_parallel=n, pruner="none", name=f"bulk {n}")
        with CaptureQueriesContext(connection) as ctx:
            assert sweep_advance(sweep_id=sweep.pk)["launched"] == n
        counts.append(len(ctx.captured_queries))
        jobs = Job.objects.filter(sweep_trial__sweep=sweep).select_related("run")
        assert jobs.count() == n and {j.status for j in jobs} == {"pending"}
        for j in jobs:
            assert j.run.status == "queued" and j.run.config["sweep"]["trial"] == j.sweep_trial.number
            assert j.run.config["parameters"]["lr"] == j.sweep_trial.params["lr"] and j.public_id in j.output_dir
            assert j.events.first().reason.startswith("launched by owner on ")
    # 50 trials are two chunks of 25: a few more statements per chunk, none per trial.
    assert counts[1] <= counts[0] + 20, counts


def test_a_point_the_template_refuses_fails_alone_in_its_chunk(team: Any, local_cluster: Any) -> None:
    from deeprepo_web.jobs.services.errors import JobInputError
    from deeprepo_web.jobs.services.launch import jobs_launch

    template = builtin("demo-grpo")
    out = jobs_launch(project=team.project, template=template, cluster=local_cluster, user=team.owner, points=[
        ("a", {"steps": 5}), ("b", {"steps": 0}), ("a", {"steps": 6})])
    assert isinstance(out[1], JobInputError) and out[1].field == "steps"
    assert [j.run.name for j in out if isinstance(j, Job)] == ["a", "a (2)"]
    assert Job.objects.filter(project=team.project).count() == 2
