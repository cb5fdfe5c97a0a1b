"""The MLflow tracking endpoints (`/api/2.0/mlflow/<endpoint>`): one handler per endpoint, each
taking the API key and the request's arguments and returning the JSON answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.mlflow_server import experiments as ex
from deeprepo_web.mlflow_server import runs as rn
from deeprepo_web.mlflow_server.errors import invalid
from deeprepo_web.mlflow_server.metrics import metric_history, metrics_log
from deeprepo_web.mlflow_server.wire import integer, pairs, text

MAX_METRICS, MAX_PARAMS, MAX_TAGS, MAX_ITEMS = 1000, 100, 100, 1000
MAX_RESULTS = 1000

Handler = Callable[[ApiKey, dict[str, Any]], dict[str, Any]]


def _run(key: ApiKey, data: dict[str, Any]) -> Any:
    return rn.mlflow_run_get(key.project, text(data, "run_id", required=False) or text(data, "run_uuid"))


def _page(data: dict[str, Any], default: int) -> tuple[int, int]:
    limit = integer(data, "max_results", default) or default
    if not 0 < limit <= 50_000:
        raise invalid(f"Invalid value {limit} for parameter 'max_results': between 1 and 50000")
    token = text(data, "page_token", required=False)
    if token and not token.isdigit():
        raise invalid(f"Invalid page token {token!r}")
    return int(token or 0), limit


def _view_deleted(data: dict[str, Any], field: str) -> bool | None:
    view = str(data.get(field) or "ACTIVE_ONLY").upper()
    return {"ACTIVE_ONLY": False, "DELETED_ONLY": True, "ALL": None}.get(view, False)


def experiment_get_by_name(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    return {"experiment": ex.experiment_json(ex.experiment_by_name(key.project, text(data, "experiment_name")))}


def experiment_get(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    return {"experiment": ex.experiment_json(ex.experiment_get(key.project, text(data, "experiment_id")))}


def experiment_create(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    exp = ex.experiment_create(project=key.project, name=data.get("name"), tags=dict(pairs(data, "tags")))
    return {"experiment_id": ex.wire_id(exp)}


def experiment_search(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    offset, limit = _page(data, MAX_RESULTS)
    found = ex.experiment_search(key.project, where=text(data, "filter", required=False), offset=offset, limit=limit,
                                 deleted=_view_deleted(data, "view_type"))
    answer: dict[str, Any] = {"experiments": [ex.experiment_json(e) for e in found]}
    if len(found) == limit:
        answer["next_page_token"] = str(offset + limit)
    return answer


def experiment_delete(key: ApiKey, data: dict[str, Any], *, deleted: bool = True) -> dict[str, Any]:
    ex.experiment_set(exp=ex.experiment_get(key.project, text(data, "experiment_id")), deleted=deleted)
    return {}


def experiment_update(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    ex.experiment_set(exp=ex.experiment_get(key.project, text(data, "experiment_id")), name=text(data, "new_name"))
    return {}


def experiment_set_tag(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    exp = ex.experiment_get(key.project, text(data, "experiment_id"))
    ex.experiment_set(exp=exp, tag=(text(data, "key"), text(data, "value", required=False)))
    return {}


def run_create(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    exp_id = text(data, "experiment_id", required=False) or ex.DEFAULT_ID
    exp = ex.experiment_get(key.project, exp_id)
    run = rn.mlflow_run_create(project=key.project, exp=exp, exp_id=ex.wire_id(exp),
                               name=text(data, "run_name", required=False),
                               user=text(data, "user_id", required=False),
                               start_ms=integer(data, "start_time"), tags=pairs(data, "tags"))
    return {"run": rn.run_json(run)}


def run_get(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    return {"run": rn.run_json(_run(key, data))}


def run_update(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    run = rn.mlflow_run_update(run=_run(key, data), status=text(data, "status", required=False),
                               end_ms=integer(data, "end_time"), name=text(data, "run_name", required=False))
    return {"run_info": rn.run_info(run)}


def run_delete(key: ApiKey, data: dict[str, Any], *, stage: str = "deleted") -> dict[str, Any]:
    rn.mlflow_run_change(run=_run(key, data), lifecycle_stage=stage)
    return {}


def log_batch(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    metrics, params, tags = data.get("metrics") or [], pairs(data, "params"), pairs(data, "tags")
    counts = (len(metrics) if isinstance(metrics, list) else 0, len(params), len(tags))
    for n, limit, what in zip(counts, (MAX_METRICS, MAX_PARAMS, MAX_TAGS), ("metrics", "params", "tags"),
                              strict=True):
        if n > limit:
            raise invalid(f"A batch logging request can contain at most {limit} {what}. Got {n} {what}. "
                          f"Please split up {what} across multiple requests and try again.")
    if sum(counts) > MAX_ITEMS:
        raise invalid(f"A batch logging request can contain at most {MAX_ITEMS} metrics, params and tags "
                      f"in total. Got {sum(counts)}. Please split them across multiple requests.")
    run = _run(key, data)
    if params or tags:
        run = rn.mlflow_run_change(run=run, params=params, tags=tags)
    metrics_log(run=run, metrics=metrics)
    return {}


def log_metric(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    metrics_log(run=_run(key, data), metrics=[data])
    return {}


def log_param(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    rn.mlflow_run_change(run=_run(key, data), params=[(text(data, "key"), text(data, "value", required=False))])
    return {}


def set_tag(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    rn.mlflow_run_change(run=_run(key, data), tags=[(text(data, "key"), text(data, "value", required=False))])
    return {}


def delete_tag(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    rn.mlflow_run_change(run=_run(key, data), drop_tag=text(data, "key"))
    return {}


def log_inputs(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    datasets = data.get("datasets") or []
    if not isinstance(datasets, list):
        raise invalid("Invalid value for parameter 'datasets': expected a list")
    rn.dataset_inputs(run=_run(key, data), datasets=datasets)
    return {}


def run_search(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    offset, limit = _page(data, MAX_RESULTS)
    exp_ids = data.get("experiment_ids") or []
    if not isinstance(exp_ids, list):
        exp_ids = [exp_ids]
    wanted = [ex.wire_id(ex.experiment_get(key.project, e)) for e in exp_ids]
    found = rn.mlflow_runs_search(key.project, wanted, where=text(data, "filter", required=False),
                                  deleted=_view_deleted(data, "run_view_type"), offset=offset, limit=limit)
    answer: dict[str, Any] = {"runs": [rn.run_json(r) for r in found]}
    if len(found) == limit:
        answer["next_page_token"] = str(offset + limit)
    return answer


def get_history(key: ApiKey, data: dict[str, Any]) -> dict[str, Any]:
    run = _run(key, data)
    limit = integer(data, "max_results", 25_000) or 25_000
    token = text(data, "page_token", required=False)
    after = integer({"t": token}, "t") if token else None
    points, more = metric_history(run=run, key=text(data, "metric_key"), after=after, limit=min(limit, 25_000))
    return {"metrics": points, **({"next_page_token": str(more)} if more is not None else {})}


# (method, endpoint) → handler; reads are GET in MLflow's REST API, everything else POST.
ENDPOINTS: dict[tuple[str, str], Handler] = {
    ("GET", "experiments/get-by-name"): experiment_get_by_name,
    ("GET", "experiments/get"): experiment_get,
    ("POST", "experiments/create"): experiment_create,
    ("POST", "experiments/search"): experiment_search,
    ("GET", "experiments/search"): experiment_search,
    ("POST", "experiments/delete"): experiment_delete,
    ("POST", "experiments/restore"): lambda k, d: experiment_delete(k, d, deleted=False),
    ("POST", "experiments/update"): experiment_update,
    ("POST", "experiments/set-experiment-tag"): experiment_set_tag,
    ("POST", "runs/create"): run_create,
    ("GET", "runs/get"): run_get,
    ("POST", "runs/update"): run_update,
    ("POST", "runs/delete"): run_delete,
    ("POST", "runs/restore"): lambda k, d: run_delete(k, d, stage="active"),
    ("POST", "runs/log-batch"): log_batch,
    ("POST", "runs/log-metric"): log_metric,
    ("POST", "runs/log-parameter"): log_param,
    ("POST", "runs/set-tag"): set_tag,
    ("POST", "runs/delete-tag"): delete_tag,
    ("POST", "runs/log-inputs"): log_inputs,
    ("POST", "runs/search"): run_search,
    ("GET", "metrics/get-history"): get_history,
    # Logged models (mlflow.<flavor>.log_model) are not kept; an empty search lets run artifacts resolve.
    ("POST", "logged-models/search"): lambda k, d: {"models": []},
}
