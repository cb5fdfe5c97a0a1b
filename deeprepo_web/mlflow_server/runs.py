"""MLflow runs as our runs: an MLflow run id is the external id of a Run (source `mlflow`) in the
API key's project. Params are the run's config; every MLflow tag is kept under config `_mlflow.tags`
(what `runs/get` answers) and the user's own tags are also the run's tags (`key=value`), with
`experiment=<name>` added so the runs table can filter by experiment."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.mlflow_server.errors import invalid, missing
from deeprepo_web.mlflow_server.models import Experiment
from deeprepo_web.mlflow_server.wire import number_out
from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, MetricSeries, Run, RunStatus

SOURCE = "mlflow"
META = "_mlflow"  # the config key holding what MLflow knows that is not a param
STATUS_IN = {"RUNNING": RunStatus.RUNNING, "SCHEDULED": RunStatus.QUEUED, "FINISHED": RunStatus.FINISHED,
             "FAILED": RunStatus.FAILED, "KILLED": RunStatus.CANCELLED}
STATUS_OUT: dict[str, str] = {str(v): k for k, v in STATUS_IN.items()} | {str(RunStatus.CRASHED): "FAILED"}
MAX_TAG = 200  # characters of one of our run tags (the column's size)


def _ms(when: datetime | None) -> int | None:
    return int(when.timestamp() * 1000) if when else None


def _when(ms: int | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, tz=UTC) if ms else None


def meta(run: Run) -> dict[str, Any]:
    value = (run.config or {}).get(META)
    return value if isinstance(value, dict) else {}


def run_info(run: Run) -> dict[str, Any]:
    m = meta(run)
    run_id, exp_id = run.external_id, str(m.get("experiment_id", "0"))
    return {
        "run_id": run_id, "run_uuid": run_id, "run_name": run.name, "experiment_id": exp_id,
        "user_id": str(m.get("user") or ""), "status": STATUS_OUT.get(run.status, "RUNNING"),
        "start_time": _ms(run.started_at), "end_time": _ms(run.finished_at),
        "artifact_uri": f"mlflow-artifacts:/{exp_id}/{run_id}/artifacts",
        "lifecycle_stage": m.get("lifecycle_stage") or "active",
    }


def run_json(run: Run) -> dict[str, Any]:
    m = meta(run)
    last = MetricSeries.objects.filter(run=run).values_list("key", "last_value", "last_step")[:10_000]
    inputs = [{"tags": [{"key": "mlflow.data.context", "value": d["context"]}] if d.get("context") else [],
               "dataset": {k: v for k, v in d.items() if k != "context"}} for d in m.get("inputs") or []]
    data = {
        "metrics": [{"key": k, "value": number_out(v), "step": s or 0, "timestamp": _ms(run.updated_at)}
                    for k, v, s in last],
        "params": [{"key": k, "value": str(v)} for k, v in sorted((run.config or {}).items()) if k != META],
        "tags": [{"key": k, "value": v} for k, v in sorted((m.get("tags") or {}).items())],
    }
    return {"info": run_info(run), "data": data, "inputs": {"dataset_inputs": inputs}}


def mlflow_run_get(project: Project, run_id: str) -> Run:
    """The run of this project with that MLflow id; another project's run is as absent as no run."""
    run = Run.objects.filter(project=project, source=SOURCE, external_id=run_id).first() if run_id else None
    if run is None:
        raise missing(f"Run '{run_id}' not found")
    return run


def mlflow_run_create(*, project: Project, exp: Experiment, exp_id: str, name: str, user: str,
                      start_ms: int | None, tags: list[tuple[str, str]]) -> Run:
    run_id = uuid.uuid4().hex
    tag_map = dict(tags)
    name = name or tag_map.get("mlflow.runName") or f"mlflow-{run_id[:8]}"
    tag_map["mlflow.runName"] = name
    config = {META: {"run_id": run_id, "experiment": exp.name, "experiment_id": exp_id, "user": user,
                     "tags": tag_map}}
    # a nested run (mlflow.start_run(nested=True)) names its parent: an eval or a sweep trial of it
    parent_id = tag_map.get("mlflow.parentRunId")
    parent = Run.objects.filter(project=project, source=SOURCE, external_id=parent_id).first() if parent_id else None
    run, _ = run_services.run_create(
        project=project, name=name[:500], source=SOURCE, external_id=run_id, config=config, parent=parent,
        tags=_our_tags(exp.name, tag_map), notes=tag_map.get("mlflow.note.content", ""),
        started_at=_when(start_ms) or timezone.now())
    return run


def _our_tags(experiment: str, tags: dict[str, str]) -> list[str]:
    mine = [f"{k}={v}" if v else k for k, v in sorted(tags.items()) if not k.startswith("mlflow.")]
    return [t[:MAX_TAG] for t in [f"experiment={experiment}", *mine]]


def mlflow_run_change(*, run: Run, params: Sequence[tuple[str, str]] = (), tags: Sequence[tuple[str, str]] = (),
                      drop_tag: str = "", **extra: Any) -> Run:
    """Params, tags and MLflow bookkeeping in one locked read-modify-write of the run row, so that
    two writers of one run (a trainer's threads) never lose each other's keys. A param logged again
    takes its new value (MLflow's own server refuses that; trainers do it on resume)."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        config = dict(locked.config or {})
        m = dict(meta(locked))
        tag_map = dict(m.get("tags") or {})
        config.update(params)
        tag_map.update(tags)
        tag_map.pop(drop_tag, None)
        m.update(extra, tags=tag_map)
        config[META] = m
        locked.config = config
        locked.tags = _our_tags(str(m.get("experiment") or ""), tag_map)
        if tag_map.get("mlflow.runName"):
            locked.name = tag_map["mlflow.runName"][:500]
        locked.notes = tag_map.get("mlflow.note.content", locked.notes)
        locked.save(update_fields=["config", "tags", "name", "notes", "updated_at"])
    return locked


def mlflow_run_update(*, run: Run, status: str, end_ms: int | None, name: str) -> Run:
    if name:
        run = mlflow_run_change(run=run, tags=[("mlflow.runName", name)])
    if not status:
        return run
    ours = STATUS_IN.get(status)
    if ours is None:
        raise invalid(f"Invalid value {status!r} for parameter 'status': one of {', '.join(STATUS_IN)}")
    changes: dict[str, Any] = {"status": ours}
    if ours in FINAL_RUN_STATUSES and end_ms:
        changes["finished_at"] = _when(end_ms)
    elif ours not in FINAL_RUN_STATUSES:
        changes["finished_at"] = None
    return run_services.run_update(run=run, **changes)


def dataset_inputs(*, run: Run, datasets: list[Any]) -> Run:
    """log-inputs: datasets kept once each (by name and digest) with their context tag."""
    known = {(d.get("name"), d.get("digest")): d for d in meta(run).get("inputs") or []}
    for i, item in enumerate(datasets):
        ds = item.get("dataset") if isinstance(item, dict) else None
        if not isinstance(ds, dict) or not ds.get("name"):
            raise invalid(f"Invalid value for parameter 'datasets[{i}].dataset': needs at least a name")
        entry = {k: str(ds[k]) for k in ("name", "digest", "source_type", "source", "schema", "profile") if k in ds}
        context = {t.get("key"): t.get("value") for t in item.get("tags") or [] if isinstance(t, dict)}
        if context.get("mlflow.data.context"):
            entry["context"] = str(context["mlflow.data.context"])
        known[(entry.get("name"), entry.get("digest"))] = entry
    return mlflow_run_change(run=run, inputs=list(known.values()))


_CLAUSE = re.compile(r"""^\s*(?:(tags|params|attributes|attribute|attr|run)\.)?(`[^`]+`|"[^"]+"|[\w.\-/]+)\s*"""
                     r"""(=|!=)\s*('(?:[^']|'')*'|"[^"]*")\s*$""", re.IGNORECASE)
_ATTRIBUTES = {"run_name": "name", "status": "status", "run_id": "external_id", "user_id": f"config__{META}__user"}


def _filter(query: Q, clause: str) -> Q:
    match = _CLAUSE.match(clause)
    if match is None:
        raise invalid(f"Unsupported filter {clause.strip()!r}: this server reads `tags.<key> = '<value>'`, "
                      "`params.<key> = '<value>'`, `attributes.run_name|status|run_id = '<value>'` (and !=), "
                      "joined by AND")
    kind, key, op, value = match.groups()
    key, value = key.strip('`"'), value[1:-1].replace("''", "'")
    kind = (kind or "attributes").lower()
    if kind == "tags":
        q = Q(**{f"config__{META}__tags__{key}": value})
    elif kind == "params":
        q = Q(**{f"config__{key}": value})
    elif key in _ATTRIBUTES:
        if key == "status":
            value = STATUS_IN.get(value.upper(), value)
        q = Q(**{_ATTRIBUTES[key]: value})
    else:
        raise invalid(f"Unsupported filter attribute {key!r}: one of {', '.join(_ATTRIBUTES)}")
    return query & (~q if op == "!=" else q)


def mlflow_runs_search(project: Project, exp_ids: list[str], *, where: str, deleted: bool | None, offset: int,
                       limit: int) -> list[Run]:
    query = Q(project=project, source=SOURCE, **{f"config__{META}__experiment_id__in": exp_ids})
    for clause in re.split(r"\s+and\s+", where.strip(), flags=re.IGNORECASE) if where.strip() else []:
        query = _filter(query, clause)
    runs = Run.objects.filter(query)
    if deleted is not None:
        lifecycle = Q(config__contains={META: {"lifecycle_stage": "deleted"}})  # false, not NULL, when absent
        runs = runs.filter(lifecycle) if deleted else runs.exclude(lifecycle)
    return list(runs.order_by("-started_at", "-pk")[offset:offset + limit])
