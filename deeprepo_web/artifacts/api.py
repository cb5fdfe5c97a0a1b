"""Artifacts API: begin an upload, confirm it, list, get a download URL, delete.

    POST   /api/v1/runs/{run_id}/artifacts                    {name, kind, size, sha256} -> artifact + upload plan
    POST   /api/v1/runs/{run_id}/artifacts/{id}/confirm       -> artifact (ready) after size + sha256 checks
    GET    /api/v1/runs/{run_id}/artifacts                    -> list (paged)
    GET    /api/v1/runs/{run_id}/artifacts/{id}/download      -> {url, expires_in}
    DELETE /api/v1/runs/{run_id}/artifacts/{id}               -> 204
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Router, Schema, Status

from deeprepo_web import storage
from deeprepo_web.api.views import _error, _run_for, api, key_auth, read_auth
from deeprepo_web.artifacts import services
from deeprepo_web.runs.models import Artifact, Run

router = Router(tags=["artifacts"])


class ArtifactIn(Schema):
    name: str
    kind: str = "file"
    size: int
    sha256: str


@api.exception_handler(services.ArtifactError)
def _artifact_error(request: HttpRequest, exc: services.ArtifactError) -> HttpResponse:
    return _error(request, str(exc), exc.status)


@api.exception_handler(storage.StorageUnavailable)
def _store_down(request: HttpRequest, exc: storage.StorageUnavailable) -> HttpResponse:
    return _error(request, f"artifact store unavailable, try again later: {exc}", 503)


@api.exception_handler(storage.StorageError)
def _store_error(request: HttpRequest, exc: storage.StorageError) -> HttpResponse:
    return _error(request, str(exc), 502)


def artifact_out(a: Artifact) -> dict[str, Any]:
    return {
        "id": a.pk,
        "name": a.name,
        "kind": a.kind,
        "size": a.size,
        "sha256": a.sha256,
        "status": a.status,
        "created_at": a.created_at.isoformat(),
        "confirmed_at": a.confirmed_at.isoformat() if a.confirmed_at else None,
    }


def _absolute(request: HttpRequest, url: str) -> str:
    return url if url.startswith(("http://", "https://")) else request.build_absolute_uri(url)


def _artifact(run: Run, artifact_id: int) -> Artifact:
    artifact = Artifact.objects.filter(run=run, pk=artifact_id).first()
    if artifact is None:
        raise Http404
    return artifact


@router.post("/runs/{run_id}/artifacts", auth=key_auth, response={200: dict, 201: dict})
def artifact_begin(request: HttpRequest, run_id: str, payload: ArtifactIn) -> Status:
    run = _run_for(request, run_id, write=True)
    artifact, plan = services.artifact_begin(
        run=run, name=payload.name, kind=payload.kind, size=payload.size, sha256=payload.sha256
    )
    upload = plan.as_dict()
    if "url" in upload:
        upload["url"] = _absolute(request, upload["url"])
    return Status(200 if plan.method == "none" else 201, {"artifact": artifact_out(artifact), "upload": upload})


@router.post("/runs/{run_id}/artifacts/{artifact_id}/confirm", auth=key_auth)
def artifact_confirm(request: HttpRequest, run_id: str, artifact_id: int) -> dict[str, Any]:
    run = _run_for(request, run_id, write=True)
    return artifact_out(services.artifact_confirm(artifact=_artifact(run, artifact_id)))


@router.get("/runs/{run_id}/artifacts", auth=read_auth)
def artifact_list(request: HttpRequest, run_id: str, limit: int = 100, offset: int = 0) -> dict[str, Any]:
    run = _run_for(request, run_id)
    limit = max(1, min(limit, 1000))
    offset = max(0, offset)
    rows = list(Artifact.objects.filter(run=run).order_by("-created_at", "-pk")[offset : offset + limit + 1])
    return {"artifacts": [artifact_out(a) for a in rows[:limit]], "has_next": len(rows) > limit}


@router.get("/runs/{run_id}/artifacts/{artifact_id}/download", auth=read_auth)
def artifact_download(request: HttpRequest, run_id: str, artifact_id: int) -> dict[str, Any]:
    run = _run_for(request, run_id)
    url = services.artifact_download_url(artifact=_artifact(run, artifact_id))
    return {"url": _absolute(request, url)}


@router.delete("/runs/{run_id}/artifacts/{artifact_id}", auth=key_auth)
def artifact_delete(request: HttpRequest, run_id: str, artifact_id: int) -> HttpResponse:
    run = _run_for(request, run_id, write=True)
    services.artifact_delete(artifact=_artifact(run, artifact_id))
    return HttpResponse(status=204)
