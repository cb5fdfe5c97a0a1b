"""MLflow traces (`mlflow.start_span`, `@mlflow.trace`) as rollouts, through the OTLP endpoint.

A client that finds `GET /version` ≥ 3.4 sends each trace's spans to `POST /v1/traces` with the
header `x-mlflow-experiment-id`, then the trace info to `POST /api/3.0/mlflow/traces`. The spans do
not say which run made them; the trace info does (`mlflow.sourceRun`). So spans wait here until
their trace info arrives, then go to that run (or to the experiment's `<name> traces` run) and are
rebuilt into a rollout by the OTLP service; spans arriving after it go there directly. Answering the
trace info with `mlflow.trace.spansLocation=TRACKING_STORE` stops the client from also uploading
the trace as a `traces.json` artifact.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse

from deeprepo_client.formats.mlflow_common import otlp_span_data
from deeprepo_web.accounts.models import Project
from deeprepo_web.mlflow_server import experiments as ex
from deeprepo_web.mlflow_server.errors import invalid
from deeprepo_web.mlflow_server.models import PendingSpan, Trace
from deeprepo_web.mlflow_server.runs import SOURCE
from deeprepo_web.mlflow_server.views import answer, api_key, guarded
from deeprepo_web.mlflow_server.wire import body
from deeprepo_web.otlp.decode import Decoded, Item
from deeprepo_web.otlp.services import otlp_items_ingest
from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.models import Run, RunStatus

_LOCK = 18  # pg advisory lock namespace: (this, hash of the trace id) while its spans change place


def _lock(trace_ids: list[str]) -> None:
    with connection.cursor() as cur:
        for t in sorted(set(trace_ids)):
            cur.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [_LOCK, t])


def mlflow_spans_receive(*, project: Project, experiment_id: str, decoded: Decoded) -> None:
    """Spans of an MLflow client: to their trace's run if known, else kept until the trace info."""
    exp = ex.experiment_get(project, experiment_id)  # an unknown experiment: 404, nothing kept
    items = [Item(**{**asdict(i), "data": otlp_span_data(i.data, i.name)})
             for _, group in decoded.groups for i in group if i.kind == "span"]
    if not items:
        return
    with transaction.atomic():
        _lock([i.trace_id for i in items])
        runs = dict(Trace.objects.filter(project=project, trace_id__in={i.trace_id for i in items})
                    .values_list("trace_id", "run_id"))
        pending = [PendingSpan(project=project, trace_id=i.trace_id, experiment_id=ex.wire_id(exp), key=i.key,
                               item=asdict(i))
                   for i in items if i.trace_id not in runs]
        PendingSpan.objects.bulk_create(pending, ignore_conflicts=True)
        for run_id in set(runs.values()):
            otlp_items_ingest(run=Run.objects.get(pk=run_id), items=[i for i in items if runs.get(i.trace_id) == run_id])


def traces_run(project: Project, exp_id: str) -> Run:
    """The experiment's `<name> traces` run, going again if the sweep had finished it."""
    exp = ex.experiment_get(project, exp_id)
    run, _ = run_services.run_create(project=project, name=f"{exp.name} traces", source=SOURCE,
                                     external_id=f"traces-{ex.wire_id(exp)}",
                                     tags=[f"experiment={exp.name}"[:200]],
                                     config={"_mlflow": {"experiment": exp.name, "experiment_id": ex.wire_id(exp)}})
    if run.status != RunStatus.RUNNING:
        run = run_services.run_update(run=run, status=RunStatus.RUNNING, finished_at=None)
    return run


def trace_claim(*, project: Project, info: dict[str, Any]) -> Run:
    """The trace's run (its source run, or the experiment's traces run); its waiting spans go there."""
    trace_id = str(info.get("trace_id") or "").removeprefix("tr-")
    if not trace_id:
        raise invalid("Missing value for required parameter 'trace.trace_info.trace_id'")
    meta = info.get("trace_metadata") or {}
    source = meta.get("mlflow.sourceRun") if isinstance(meta, dict) else None
    run = Run.objects.filter(project=project, source=SOURCE, external_id=source).first() if source else None
    if run is None:
        location = info.get("trace_location") or {}
        exp_id = (location.get("mlflow_experiment") or {}).get("experiment_id") or ex.DEFAULT_ID
        run = traces_run(project, str(exp_id))
    return trace_settle(project=project, trace_id=trace_id, run=run)


def trace_settle(*, project: Project, trace_id: str, run: Run) -> Run:
    """The trace belongs to `run` (unless it was settled before): its waiting spans become its rollout."""
    with transaction.atomic():
        _lock([trace_id])
        claimed, _ = Trace.objects.get_or_create(project=project, trace_id=trace_id, defaults={"run": run})
        waiting = list(PendingSpan.objects.filter(project=project, trace_id=trace_id))
        if waiting:
            otlp_items_ingest(run=claimed.run, items=[Item(**p.item) for p in waiting])
            PendingSpan.objects.filter(pk__in=[p.pk for p in waiting]).delete()
    run_services.run_touch(run=claimed.run)  # the sweep finishes a traces run idle since
    return claimed.run


@guarded
def start_trace(request: HttpRequest) -> HttpResponse:
    """StartTraceV3: the trace info, sent when a trace ends. Answered with the info it came with."""
    key = api_key(request, write=True)
    trace = body(request).get("trace")
    info = trace.get("trace_info") if isinstance(trace, dict) else None
    if not isinstance(info, dict):
        raise invalid("Missing value for required parameter 'trace.trace_info'")
    trace_claim(project=key.project, info=info)
    tags = info["tags"] if isinstance(info.get("tags"), dict) else {}
    return answer({"trace": {"trace_info": {**info, "tags": {**tags, "mlflow.trace.spansLocation": "TRACKING_STORE"}}}})
