"""Issue 23: an MLflow client that dies between a trace's spans and its trace info leaves spans waiting
for a run that is never named; beat's sweep gives them to the experiment's `<name> traces` run after
DEEPREPO_MLFLOW_PENDING_SECONDS, and finishes that run once no trace came for as long (the next trace
sets it going again). The spans and the trace info go through the real endpoints, as the client sends
them; the sweep is called with a later `now` instead of waiting ten minutes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from deeprepo_web.mlflow_server import experiments as ex
from deeprepo_web.mlflow_server.models import Experiment, PendingSpan, Trace
from deeprepo_web.mlflow_server.sweep import mlflow_traces_sweep
from deeprepo_web.runs.models import Rollout, Run
from tests.otlp.bodies import agent_trace, body

pytestmark = pytest.mark.django_db

T1, T2, T3 = "1" * 32, "2" * 32, "3" * 32


def _spans(client: Any, key: str, exp_id: str, trace: str, reward: float) -> None:
    resp = client.post("/v1/traces", data=body(agent_trace(trace, reward), **{"service__name": "agent"}),
                       content_type="application/json",
                       headers={"Authorization": f"Bearer {key}", "x-mlflow-experiment-id": exp_id})
    assert resp.status_code == 200, resp.content


def _trace_info(client: Any, key: str, exp_id: str, trace: str) -> None:
    info = {"trace_id": f"tr-{trace}", "trace_location": {"type": "MLFLOW_EXPERIMENT",
                                                          "mlflow_experiment": {"experiment_id": exp_id}},
            "state": "OK", "trace_metadata": {}, "tags": {}}
    resp = client.post("/api/3.0/mlflow/traces", data={"trace": {"trace_info": info}}, content_type="application/json",
                       headers={"Authorization": f"Bearer {key}"})
    assert resp.status_code == 200, resp.content


def test_spans_without_trace_info_reach_the_traces_run_which_then_finishes(client: Any, team: Any) -> None:
    exp = ex.experiment_create(project=team.project, name="agents", tags={})
    exp_id = ex.wire_id(exp)
    _spans(client, team.key, exp_id, T1, 0.25)  # ... and the client died before the trace info
    assert PendingSpan.objects.filter(trace_id=T1, experiment_id=exp_id).count() == 6
    assert not Run.objects.filter(project=team.project).exists()

    now = timezone.now()
    assert mlflow_traces_sweep(now=now).settled == 0  # young spans wait: their trace info may still come
    later = now + timedelta(seconds=settings.DEEPREPO_MLFLOW_PENDING_SECONDS + 1)
    swept = mlflow_traces_sweep(now=later)
    assert (swept.settled, swept.dropped, swept.finished) == (1, 0, 0)
    run = Run.objects.get(project=team.project, name="agents traces")
    assert run.status == "running" and run.tags == ["experiment=agents"]
    assert list(Rollout.objects.filter(run=run).values_list("reward", flat=True)) == [0.25]
    assert not PendingSpan.objects.exists() and Trace.objects.get(trace_id=T1).run == run

    # A span of that trace arriving even later follows it to the run, no new row waits.
    _spans(client, team.key, exp_id, T1, 0.25)
    assert not PendingSpan.objects.exists() and Rollout.objects.filter(run=run).count() == 1

    # No trace for the whole while: the traces run is finished, once.
    much_later = timezone.now() + timedelta(seconds=settings.DEEPREPO_MLFLOW_PENDING_SECONDS + 1)
    assert mlflow_traces_sweep(now=much_later).finished == 1
    run.refresh_from_db()
    assert run.status == "finished" and run.finished_at is not None
    assert mlflow_traces_sweep(now=much_later).finished == 0

    # The next trace (spans, then its info, as a live client sends them) sets it going again.
    _spans(client, team.key, exp_id, T2, 1.0)
    _trace_info(client, team.key, exp_id, T2)
    run.refresh_from_db()
    assert run.status == "running" and run.finished_at is None
    assert sorted(Rollout.objects.filter(run=run).values_list("reward", flat=True)) == [0.25, 1.0]


def test_spans_of_a_deleted_experiment_are_dropped(client: Any, team: Any) -> None:
    exp = ex.experiment_create(project=team.project, name="gone", tags={})
    _spans(client, team.key, ex.wire_id(exp), T3, 0.5)
    Experiment.objects.filter(pk=exp.pk).delete()
    later = timezone.now() + timedelta(seconds=settings.DEEPREPO_MLFLOW_PENDING_SECONDS + 1)
    swept = mlflow_traces_sweep(now=later)
    assert (swept.settled, swept.dropped) == (0, 6) and not PendingSpan.objects.exists()
    assert not Run.objects.filter(project=team.project).exists()


def test_beat_runs_the_sweep(team: Any) -> None:
    from workers.celery import app
    from workers.tasks import mlflow as tasks

    entry = settings.CELERY_BEAT_SCHEDULE["mlflow-traces"]
    assert entry["task"] == "deeprepo.mlflow.traces_sweep" == tasks.mlflow_traces_sweep.name
    assert "workers.tasks.mlflow" in app.conf.include  # the worker loads it
    assert tasks.mlflow_traces_sweep() == {"settled": 0, "dropped": 0, "finished": 0}
