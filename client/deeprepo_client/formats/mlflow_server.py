"""Pull an experiment from a live MLflow tracking server over its REST API: every run (params,
tags, the full history of every metric, page by page) and every trace (as rollouts of the run that
made it). `mlflow://HOST:PORT` means http; an http(s):// URL is taken as it is.

A server that stops answering is retried for `retry_seconds`; past that the pull ends with a
fatal Problem saying where it stopped. Everything is stored idempotently (runs by MLflow run id,
points by (key, step), rollouts by trace id), so the same pull again resumes without doubling.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from ..records import Event, Problem, RolloutRecord, RunEvent
from ._batches import batch_points, batch_rollouts
from .mlflow_common import logged_tables, metric_points, run_record, trace_rollout, trace_run_id
from .wandb_tables import rows_rollouts

PAGE = 1000
HISTORY_PAGE = 25_000


class ServerGone(Exception):
    pass


class ServerRefused(Exception):
    pass


def base_url(url: str) -> str:
    if url.startswith("mlflow://"):
        return "http://" + url[len("mlflow://"):].rstrip("/")
    return url.rstrip("/")


class _Api:
    def __init__(self, url: str, retry_seconds: float, token: str | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = base_url(url)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # A server pulling for an editor passes a transport that checks each hop, so redirects are
        # followed only through it; alone, none are followed.
        self.client = httpx.Client(base_url=self.url, timeout=60, headers=headers, transport=transport,
                                   follow_redirects=transport is not None)
        self.retry_seconds = retry_seconds

    def call(self, method: str, path: str, what: str, **kw: Any) -> dict[str, Any]:
        deadline = time.monotonic() + self.retry_seconds
        wait = 0.2
        while True:
            try:
                res = self.client.request(method, path, **kw)
                if res.status_code < 500:
                    if res.status_code >= 400:
                        raise ServerRefused(f"{what}: the server answered {res.status_code}: {res.text[:300]}")
                    return res.json()  # type: ignore[no-any-return]
                problem = f"HTTP {res.status_code}"
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            except httpx.RequestError as exc:  # refused before sending (an address the server may not call)
                raise ServerRefused(f"{what}: {exc}") from exc
            if time.monotonic() > deadline:
                raise ServerGone(f"{what}: the MLflow server at {self.url} stopped answering ({problem}) "
                                 f"for {self.retry_seconds:.0f} s")
            time.sleep(wait)
            wait = min(wait * 2, 5.0)

    def pages(self, method: str, path: str, what: str, key: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        token = None
        while True:
            payload = {**body, **({"page_token": token} if token else {})}
            page = (self.call(method, path, what, json=payload) if method == "POST"
                    else self.call(method, path, what, params=payload))
            yield from page.get(key) or []
            token = page.get("next_page_token")
            if not token:
                return


def _history(api: _Api, run_id: str, key: str) -> list[dict[str, Any]]:
    return list(api.pages("GET", "/api/2.0/mlflow/metrics/get-history", f"run {run_id} metric {key!r}", "metrics",
                          {"run_id": run_id, "metric_key": key, "max_results": HISTORY_PAGE}))


def _runs(api: _Api, exp_id: str, name: str) -> Iterator[Event]:
    for run in api.pages("POST", "/api/2.0/mlflow/runs/search", f"experiment {name!r} runs", "runs",
                         {"experiment_ids": [exp_id], "max_results": PAGE}):
        info, data = run.get("info") or {}, run.get("data") or {}
        run_id = str(info.get("run_id") or info.get("run_uuid") or "")
        yield RunEvent(run_id, run_record(info, data.get("params"), data.get("tags"), name))
        keys = sorted({m["key"] for m in data.get("metrics") or [] if isinstance(m, dict) and "key" in m})
        for key in keys:
            yield from batch_points(run_id, metric_points([(key, _history(api, run_id, key))]))
        yield from batch_rollouts(run_id, _tables(api, run_id, data.get("tags")))


def _tables(api: _Api, run_id: str, tags: Any) -> Iterator[RolloutRecord | Problem]:
    """Tables logged with mlflow.log_table ({"columns", "data"} JSON artifacts) as rollouts."""
    for path in logged_tables(tags):
        try:
            table = api.call("GET", "/get-artifact", f"run {run_id} table {path}",
                             params={"run_uuid": run_id, "path": path})
        except ServerRefused as exc:  # a table the server cannot serve costs that table only
            yield Problem(api.url, None, str(exc))
            continue
        if isinstance(table, dict) and isinstance(table.get("columns"), list) and isinstance(table.get("data"), list):
            yield from rows_rollouts(table["columns"], table["data"], f"{api.url} run {run_id} {path}", path, 0,
                                     run_id, Path("."))


def _traces(api: _Api, exp_id: str, name: str, known: set[str]) -> Iterator[Event]:
    body = {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": exp_id}}],
            "max_results": 100}
    for info in api.pages("POST", "/api/3.0/mlflow/traces/search", f"experiment {name!r} traces", "traces", body):
        trace_id = info.get("trace_id")
        full = api.call("GET", "/api/3.0/mlflow/traces/get", f"trace {trace_id}", params={"trace_id": trace_id})
        trace = full.get("trace") or {}
        record = trace_rollout(trace.get("trace_info") or info, trace.get("spans") or [])
        if record is None:
            continue
        ref = trace_run_id(info) or f"{name} traces"
        if ref not in known:
            known.add(ref)
            yield RunEvent(ref, {"name": ref, "source": "mlflow", "external_id": ref})
        yield from batch_rollouts(ref, [record])


def pull(url: str, experiment: str, *, retry_seconds: float = 60.0, token: str | None = None,
         transport: httpx.BaseTransport | None = None) -> Iterator[Event]:
    api = _Api(url, retry_seconds, token, transport)
    where = f"{api.url} experiment {experiment!r}"
    try:
        found = api.call("GET", "/api/2.0/mlflow/experiments/get-by-name", f"experiment {experiment!r}",
                         params={"experiment_name": experiment})
        exp_id = str(found["experiment"]["experiment_id"])
        known: set[str] = set()
        for ev in _runs(api, exp_id, experiment):
            if isinstance(ev, RunEvent):
                known.add(ev.ref)
            yield ev
        yield from _traces(api, exp_id, experiment, known)
    except ServerRefused as exc:
        yield Problem(where, None, str(exc), fatal=True)
    except ServerGone as exc:
        yield Problem(where, None, f"{exc}. What was read before is stored; run the same import again to finish "
                                   "(nothing is stored twice)", fatal=True)
    except (KeyError, TypeError, ValueError) as exc:
        yield Problem(where, None, f"unexpected answer from the MLflow REST API: {type(exc).__name__}: {exc}",
                      fatal=True)
    finally:
        api.client.close()
