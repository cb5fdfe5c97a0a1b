"""Runs API: create, update and finish runs, ingest metrics and rollouts (ingest key); read runs and
series (any key or a session). Reading rollouts is the trajectories API (`trajectories/api.py`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pydantic
from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router, Status
from ninja.errors import HttpError

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.api.auth import ingest_auth, read_auth
from deeprepo_web.api.errors import loads, pydantic_error_line
from deeprepo_web.audit.context import actor_name
from deeprepo_web.runs import axes, deletion, schemas, selectors, services
from deeprepo_web.runs.access import run_for, run_for_key
from deeprepo_web.runs.ingest.badkeys import metrics_ingest_good, refusal_line
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest as store_rollouts
from deeprepo_web.runs.models import Run
from deeprepo_web.text import clean_deep

router = Router(tags=["runs"])


@router.post("/runs", auth=ingest_auth, response={200: schemas.RunOut, 201: schemas.RunOut})
def run_create(request: HttpRequest, payload: schemas.RunIn) -> Status:
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    if payload.project and payload.project != key.project.slug:
        raise HttpError(404, f"project: {payload.project!r} is not the project of this API key")
    parent = None
    if payload.parent_run_id:
        parent = run_for_key(key, payload.parent_run_id)
    data = clean_deep(payload.model_dump(exclude={"parent_run_id", "project"}))
    run, created = services.run_create(project=key.project, parent=parent, **data)
    return Status(201 if created else 200, run)


@router.get("/runs", auth=read_auth, response=list[schemas.RunOut])
def run_list(request: HttpRequest, project: str | None = None, limit: int = 100) -> QuerySet[Run]:
    principal = request.auth  # type: ignore[attr-defined]
    if isinstance(principal, ApiKey):
        proj = principal.project
    else:
        if not project:
            raise HttpError(400, "project: required when reading with a session")
        proj, _ = access.project_for_user(principal, project)
    return selectors.run_list(project=proj).select_related("parent", "project")[: max(1, min(limit, 1000))]


@router.get("/runs/{run_id}", auth=read_auth, response=schemas.RunOut)
def run_detail(request: HttpRequest, run_id: str) -> Run:
    return run_for(request, run_id)


@router.patch("/runs/{run_id}", auth=ingest_auth, response=schemas.RunOut)
def run_update(request: HttpRequest, run_id: str, payload: schemas.RunPatch) -> Run:
    run = run_for(request, run_id, write=True)
    # null means "leave as is": every run field is a non-null column
    changes = clean_deep(payload.model_dump(exclude_unset=True, exclude_none=True))
    return services.run_update(run=run, **changes)


@router.delete("/runs/{run_id}", auth=ingest_auth, response={200: schemas.RunDeleteOut, 202: schemas.RunDeleteOut})
def run_delete(request: HttpRequest, run_id: str) -> Status:
    """Delete a run and all it holds; 202 when it is big enough to be deleted by the worker."""
    run = run_for(request, run_id, write=True)
    contents = deletion.run_contents(run=run).as_dict()
    done = deletion.run_delete_request(run=run, actor=actor_name())
    return Status(200 if done else 202, {"id": run_id, "deleted": done, "contents": contents})


@router.post("/runs/{run_id}/finish", auth=ingest_auth, response=schemas.RunOut)
def run_finish(request: HttpRequest, run_id: str, payload: schemas.FinishIn) -> Run:
    run = run_for(request, run_id, write=True)
    return services.run_finish(run=run, status=payload.status)


# NUL and lone surrogates are legal JSON escapes but Postgres refuses them: only bodies that
# contain such an escape pay for the deep clean.
_NEEDS_CLEAN = re.compile(rb"\\u0000|\\u[dD][89abAB][0-9a-fA-F]{2}")


def _batch(request: HttpRequest, adapter: pydantic.TypeAdapter[Any], name: str) -> list[Any]:
    body = request.body
    if body[:1] == b"[":
        # The usual body, a list: parsed and validated in one pass by pydantic's own JSON reader,
        # without building the whole document as Python objects first (a third less CPU on a
        # 4 MB rollout batch). Anything it refuses (bad JSON, a wrong field, a lone surrogate it
        # cannot read) goes the way below, which words the error exactly as it always did.
        try:
            items = adapter.validate_json(body)
        except pydantic.ValidationError:
            pass
        else:
            return clean_deep(items) if _NEEDS_CLEAN.search(body) else items
    data = loads(body)
    if isinstance(data, dict) and isinstance(data.get(name), list):
        data = data[name]
    if not isinstance(data, list):
        raise HttpError(422, f"body: expected a JSON list of {name} (or {{\"{name}\": [...]}})")
    try:
        items = adapter.validate_python(data)
    except pydantic.ValidationError as exc:
        raise HttpError(422, pydantic_error_line(exc.errors(), prefix=name)) from exc
    if _NEEDS_CLEAN.search(body):
        items = clean_deep(items)
    return items


_METRICS_DOC = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "array", "items": {"type": "object", "required": ["step", "values"], "properties": {
        "step": {"type": "integer"}, "time": {"type": "number"},
        "values": {"type": "object", "additionalProperties": {"type": "number"}}}}}}}, "required": True}}
_ROLLOUTS_DOC = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "array", "items": {"type": "object", "required": ["example_key"],
                               "description": "see deeprepo_client.records.RolloutRecord"}}}},
    "required": True}}


@contextmanager
def _refusal_noted(request: HttpRequest, run: Run, kind: str) -> Iterator[None]:
    """A batch refused for good (4xx with a reason; not 413, which a client splits and re-sends)
    is noted on the run, whose page then shows it. A request joining several of the client's
    batches (X-Deeprepo-Batches) is re-sent batch by batch: only those refusals count."""
    try:
        yield
    except (HttpError, services.IngestError) as exc:
        status = exc.status_code if isinstance(exc, HttpError) else 422
        joined = request.headers.get("X-Deeprepo-Batches", "1") not in ("", "1")
        if 400 <= status < 500 and status != 413 and not joined:
            services.ingest_refusal_note(run=run, kind=kind, error=str(exc))
        raise


def _open_for_ingest(run: Run) -> None:
    """A run the worker is about to delete takes no more data: what came now would go with it, or
    be written while the deletion runs. Refused before anything is read or noted on the run."""
    if run.deletion_requested_at is not None:
        raise HttpError(409, f"run {run.public_id}: it is being deleted (asked "
                             f"{run.deletion_requested_at:%Y-%m-%d %H:%M} UTC); nothing was stored. "
                             "Log to a new run.")


@router.post("/runs/{run_id}/metrics", auth=ingest_auth, response=schemas.MetricsIngestOut, openapi_extra=_METRICS_DOC,
             exclude_defaults=True)  # "refused" only when a key was
def metrics_ingest(request: HttpRequest, run_id: str) -> dict[str, Any]:
    run = run_for(request, run_id, write=True)
    _open_for_ingest(run)
    with _refusal_noted(request, run, "metrics"):
        points = _batch(request, schemas.metric_batch, "points")
        stored, refused = metrics_ingest_good(run=run, points=points)
    if refused:  # stored but for these keys: noted for good (the client keeps them, never re-sends them alone)
        services.ingest_refusal_note(run=run, kind="metrics", error=refusal_line(refused))
    services.run_touch(run=run)
    return {"received": sum(len(p["values"]) for p in points), "stored": stored, "refused": refused}


@router.post("/runs/{run_id}/rollouts", auth=ingest_auth, response=schemas.IngestOut,
             openapi_extra=_ROLLOUTS_DOC)
def rollouts_ingest(request: HttpRequest, run_id: str) -> dict[str, int]:
    run = run_for(request, run_id, write=True)
    _open_for_ingest(run)
    with _refusal_noted(request, run, "rollouts"):
        rollouts = _batch(request, schemas.rollout_batch, "rollouts")
        stored = store_rollouts(run=run, rollouts=rollouts, body=request.body)
    services.run_touch(run=run)
    return {"received": len(rollouts), "stored": stored}


@router.get("/runs/{run_id}/series", auth=read_auth)
def series(request: HttpRequest, run_id: str, key: str | None = None, buckets: int = 1000,
           after: int | None = None, start: int | None = None, end: int | None = None,
           extremes: bool = False, x: str | None = None) -> dict[str, Any]:
    """Without `key`: the run's metric keys. With it: the downsampled series (≤ 2,000 buckets) of
    steps [`start`, `end`] (default: all), down to the raw points when the range is narrow; its
    `nonfinite` lists the NaN / ±Infinity points. With `extremes`: the steps of the lowest and
    highest value in [`start`, `end`] (what a chart's hover names for one bucket). `x_key` names the
    x-axis defined for the key (W&B's define_metric), if any; with `x` (a metric key), `x` lists that
    metric's values at the buckets' steps, to draw the key against it.

    With `after`: the raw points past that step, of `key` or of every key (≤ 2,000 a key), which is
    what a live chart appends; keys listed in `truncated` had more and should be read whole.
    """
    run = run_for(request, run_id)
    if after is not None:
        return selectors.series_after(run=run, after=after, key=key)
    if key is None:
        return {"keys": selectors.series_keys(run=run)}
    if extremes:
        if start is None or end is None or not 0 <= end - start <= selectors.MAX_EXTREMES_SPAN:
            raise HttpError(422, f"extremes: needs start and end at most {selectors.MAX_EXTREMES_SPAN} steps apart")
        found = selectors.series_extremes(run=run, key=key, start=start, end=end)
        if found is None:
            raise HttpError(404, f"key: run {run_id} has no metric {key!r}")
        return found
    result = selectors.series_downsampled(run=run, key=key, buckets=buckets, start=start, end=end)
    if result is None:
        raise HttpError(404, f"key: run {run_id} has no metric {key!r}")
    out = {**result.as_dict(), "x_key": axes.metric_axes_for(run=run, keys=[key]).get(key)}
    if x is not None:
        xs = axes.series_x_values(run=run, x_key=x, steps=result.steps)
        if xs is None:
            raise HttpError(404, f"x: run {run_id} has no metric {x!r}")
        out["x"] = xs
    return out
