"""Beat's tidy-up of MLflow traces (`deeprepo.mlflow.traces_sweep`).

A client sends a trace's spans first and its trace info after (traces.py); a client that dies in
between leaves spans waiting for a run that is never named. After DEEPREPO_MLFLOW_PENDING_SECONDS
they go to their experiment's `<name> traces` run, as a trace without a source run does, so what
the agent did is kept. An experiment's traces run has no end of its own (traces come whenever the
agent runs): it is finished once no trace came for the same while, and goes again with the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.mlflow_server import experiments as ex
from deeprepo_web.mlflow_server.errors import MlflowError
from deeprepo_web.mlflow_server.models import PendingSpan
from deeprepo_web.mlflow_server.runs import SOURCE
from deeprepo_web.mlflow_server.traces import trace_settle, traces_run
from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.models import Run, RunStatus

# Traces settled per beat (each a rollout rebuilt); the rest wait for the next beat.
TRACES_PER_SWEEP = 500


@dataclass
class Swept:
    settled: int = 0  # traces whose waiting spans became a rollout of the traces run
    dropped: int = 0  # spans of an experiment that no longer exists
    finished: int = 0  # idle traces runs finished


def mlflow_traces_sweep(*, now: datetime | None = None) -> Swept:
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.DEEPREPO_MLFLOW_PENDING_SECONDS)
    done = Swept()
    stale = (PendingSpan.objects.filter(received_at__lt=cutoff).order_by("project_id", "trace_id")
             .values_list("project_id", "trace_id", "experiment_id").distinct()[:TRACES_PER_SWEEP])
    projects: dict[int, Project] = {}
    fed: set[int] = set()  # traces runs that just got a rollout are not idle
    for project_id, trace_id, exp_id in stale:
        project = projects.get(project_id) or projects.setdefault(project_id, Project.objects.get(pk=project_id))
        try:
            run = traces_run(project, exp_id or ex.DEFAULT_ID)  # rows kept before experiment_id was: Default
        except MlflowError:  # the experiment was deleted meanwhile: nobody can ever claim these spans
            done.dropped += PendingSpan.objects.filter(project=project, trace_id=trace_id).delete()[0]
            continue
        fed.add(trace_settle(project=project, trace_id=trace_id, run=run).pk)
        done.settled += 1
    idle = Run.objects.filter(source=SOURCE, external_id__startswith="traces-", status=RunStatus.RUNNING,
                              updated_at__lt=cutoff).exclude(pk__in=fed)
    for run in idle[:TRACES_PER_SWEEP]:
        run_services.run_finish(run=run)
        done.finished += 1
    return done
