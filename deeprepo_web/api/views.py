"""The HTTP API (/api/v1): ingest with a Bearer API key, reads with a key or a logged-in session."""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Router, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.api import schemas
from deeprepo_web.importers.api import register as imports_register
from deeprepo_web.runs import selectors, services
from deeprepo_web.runs.models import Rollout, Run
from deeprepo_web.text import clean_deep

# ---------------------------------------------------------------- auth


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return access.api_key_from_secret(token)


class SessionMember:
    """A logged-in browser session; membership is checked per object by the view."""

    def __call__(self, request: HttpRequest) -> Any:
        user = getattr(request, "user", None)
        return user if user is not None and user.is_authenticated else None


key_auth = ApiKeyAuth()
read_auth = [key_auth, SessionMember()]


def _run_for(request: HttpRequest, run_id: str, *, write: bool = False) -> Run:
    principal = request.auth  # type: ignore[attr-defined]
    if isinstance(principal, ApiKey):
        if write and not access.key_allows(principal, "ingest"):
            raise HttpError(403, "this API key may not write")
        return access.run_for_key(principal, run_id)
    return access.run_for_user(principal, run_id, write=write)


# ---------------------------------------------------------------- errors as one line


class JsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        return _loads(request.body)


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body)
    except UnicodeDecodeError as exc:
        raise HttpError(400, f"body is not UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise HttpError(400, f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc


def _loc(parts: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in ("body", "payload"):
            # pydantic names union members and function validators; users never wrote those
            if isinstance(part, str) and (part in {"float", "int", "str", "bool", "none"} or "[" in part):
                continue
            out += f".{part}" if out else str(part)
    return out or "body"


def pydantic_error_line(errors: list[Any], prefix: str = "") -> str:
    first = errors[0]
    where = _loc(first.get("loc", ()))
    if prefix:
        where = prefix + (where if where.startswith("[") else f".{where}")
    message = first.get("msg", "invalid value")
    if first.get("type") == "finite_number":
        message = "must be a finite number (NaN and Infinity are refused here)"
    extra = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {message}{extra}"


api = NinjaAPI(
    title="deeprepo-web API",
    version="1",
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
    parser=JsonParser(),
)


def _error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return api.create_response(request, {"error": message}, status=status)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return _error(request, pydantic_error_line(exc.errors), 422)


@api.exception_handler(AuthenticationError)
def _auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _error(request, "missing, unknown, expired or revoked API key (Authorization: Bearer drk_…)", 401)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return _error(request, str(exc), exc.status_code)


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, "not found", 404)


@api.exception_handler(services.IngestError)
def _ingest_error(request: HttpRequest, exc: services.IngestError) -> HttpResponse:
    return _error(request, str(exc), 422)


# ---------------------------------------------------------------- runs

router = Router()


def run_out(run: Run) -> dict[str, Any]:
    return {
        "id": run.public_id,
        "name": run.name,
        "kind": run.kind,
        "status": run.status,
        "model": run.model,
        "environment": run.environment,
        "config": run.config,
        "tags": run.tags,
        "source": run.source,
        "parent_run_id": run.parent.public_id if run.parent_id and run.parent else None,
        "checkpoint_step": run.checkpoint_step,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "url": f"{settings.SITE_URL}/p/{run.project.slug}/runs/{run.public_id}/",
    }


@router.post("/runs", auth=key_auth, response={200: schemas.RunOut, 201: schemas.RunOut})
def run_create(request: HttpRequest, payload: schemas.RunIn) -> Status:
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    if not access.key_allows(key, "ingest"):
        raise HttpError(403, "this API key may not write")
    if payload.project and payload.project != key.project.slug:
        raise HttpError(404, f"project: {payload.project!r} is not the project of this API key")
    parent = None
    if payload.parent_run_id:
        parent = access.run_for_key(key, payload.parent_run_id)
    data = clean_deep(payload.model_dump(exclude={"parent_run_id", "project"}))
    run, created = services.run_create(project=key.project, parent=parent, **data)
    return Status(201 if created else 200, run_out(run))


@router.get("/runs", auth=read_auth, response=list[schemas.RunOut])
def run_list(request: HttpRequest, project: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    principal = request.auth  # type: ignore[attr-defined]
    if isinstance(principal, ApiKey):
        proj = principal.project
    else:
        if not project:
            raise HttpError(400, "project: required when reading with a session")
        proj, _ = access.project_for_user(principal, project)
    runs = selectors.run_list(project=proj).select_related("parent", "project")[: max(1, min(limit, 1000))]
    return [run_out(r) for r in runs]


@router.get("/runs/{run_id}", auth=read_auth, response=schemas.RunOut)
def run_detail(request: HttpRequest, run_id: str) -> dict[str, Any]:
    return run_out(_run_for(request, run_id))


@router.patch("/runs/{run_id}", auth=key_auth, response=schemas.RunOut)
def run_update(request: HttpRequest, run_id: str, payload: schemas.RunPatch) -> dict[str, Any]:
    run = _run_for(request, run_id, write=True)
    # null means "leave as is": every run field is a non-null column
    changes = clean_deep(payload.model_dump(exclude_unset=True, exclude_none=True))
    return run_out(services.run_update(run=run, **changes))


@router.post("/runs/{run_id}/finish", auth=key_auth, response=schemas.RunOut)
def run_finish(request: HttpRequest, run_id: str, payload: schemas.FinishIn) -> dict[str, Any]:
    run = _run_for(request, run_id, write=True)
    return run_out(services.run_finish(run=run, status=payload.status))


# NUL and lone surrogates are legal JSON escapes but Postgres refuses them: only bodies that
# contain such an escape pay for the deep clean.
_NEEDS_CLEAN = re.compile(rb"\\u0000|\\u[dD][89abAB][0-9a-fA-F]{2}")


def _batch(request: HttpRequest, adapter: pydantic.TypeAdapter[Any], name: str) -> list[Any]:
    body = request.body
    data = _loads(body)
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


@router.post("/runs/{run_id}/metrics", auth=key_auth, response=schemas.IngestOut, openapi_extra=_METRICS_DOC)
def metrics_ingest(request: HttpRequest, run_id: str) -> dict[str, int]:
    run = _run_for(request, run_id, write=True)
    points = _batch(request, schemas.metric_batch, "points")
    stored = services.metrics_ingest(run=run, points=points)
    return {"received": sum(len(p["values"]) for p in points), "stored": stored}


@router.post("/runs/{run_id}/rollouts", auth=key_auth, response=schemas.IngestOut, openapi_extra=_ROLLOUTS_DOC)
def rollouts_ingest(request: HttpRequest, run_id: str) -> dict[str, int]:
    run = _run_for(request, run_id, write=True)
    rollouts = _batch(request, schemas.rollout_batch, "rollouts")
    stored = services.rollouts_ingest(run=run, rollouts=rollouts)
    return {"received": len(rollouts), "stored": stored}


@router.get("/runs/{run_id}/series", auth=read_auth)
def series(request: HttpRequest, run_id: str, key: str | None = None, buckets: int = 1000) -> dict[str, Any]:
    """Without `key`: the run's metric keys. With it: the downsampled series (≤ 2,000 buckets)."""
    run = _run_for(request, run_id)
    if key is None:
        return {"keys": selectors.series_keys(run=run)}
    result = selectors.series_downsampled(run=run, key=key, buckets=buckets)
    if result is None:
        raise HttpError(404, f"key: run {run_id} has no metric {key!r}")
    return result.as_dict()


def rollout_out(r: Rollout, *, turns: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": r.pk,
        "uid": r.uid,
        "example_key": r.example.key,
        "step": r.step,
        "sample_index": r.sample_index,
        "reward": r.reward,
        "reward_components": r.reward_components,
        "advantage": r.advantage,
        "num_turns": r.num_turns,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cost": r.cost,
        "is_truncated": r.is_truncated,
        "stop_condition": r.stop_condition,
        "error": r.error,
        "duration": r.duration,
        "final_answer": r.final_answer,
        "metrics": r.metrics,
    }
    if turns:
        out["turns"] = [
            {
                "index": t.index,
                "role": t.role,
                "content": t.content,
                "content_truncated": bool(t.content_blob),
                "reasoning": t.reasoning,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "latency": t.latency,
                "tool_calls": [
                    {"id": c.pk, "parent": c.parent_id, "name": c.name, "arguments": c.arguments,
                     "output": c.output, "output_truncated": bool(c.output_blob), "is_error": c.is_error}
                    for c in sorted(t.tool_calls.all(), key=lambda c: (c.parent_id or 0, c.index))
                ],
            }
            for t in selectors.turns_page(rollout=r, start=0, limit=10_000)
        ]
    return out


@router.get("/runs/{run_id}/rollouts", auth=read_auth)
def rollouts_list(
    request: HttpRequest, run_id: str, page: int = 1, per_page: int = 50, step: int | None = None,
    order: str = "id",
) -> dict[str, Any]:
    run = _run_for(request, run_id)
    filters = {"step": step} if step is not None else {}
    rows, has_next = selectors.rollout_page(
        run=run, page=page, per_page=max(1, min(per_page, 500)), order=order, filters=filters
    )
    return {"page": page, "has_next": has_next, "rollouts": [rollout_out(r) for r in rows]}


@router.get("/runs/{run_id}/rollouts/{rollout_id}", auth=read_auth)
def rollout_detail(request: HttpRequest, run_id: str, rollout_id: int) -> dict[str, Any]:
    run = _run_for(request, run_id)
    rollout = Rollout.objects.select_related("example").filter(run=run, pk=rollout_id).first()
    if rollout is None:
        raise Http404
    return rollout_out(rollout, turns=True)


imports_register(router, key_auth, read_auth)
api.add_router("/v1", router)

