"""Artifacts API: begin an upload, confirm it, list, get a download URL, delete.

    POST   /api/v1/runs/{run_id}/artifacts                    {name, kind, size, sha256} -> artifact + upload plan
    POST   /api/v1/runs/{run_id}/artifacts/{id}/confirm       -> artifact (ready) after size + sha256 checks
    GET    /api/v1/runs/{run_id}/artifacts                    -> list (paged)
    GET    /api/v1/runs/{run_id}/artifacts/{id}/download      -> {url, expires_in}
    DELETE /api/v1/runs/{run_id}/artifacts/{id}               -> 204
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from deeprepo_web.api.auth import ingest_auth, read_auth
from deeprepo_web.api.schemas import Iso
from deeprepo_web.artifacts import services
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.front.paging import keyset_page, newest_first, offset_page
from deeprepo_web.runs.access import run_for
from deeprepo_web.runs.models import Run

router = Router(tags=["artifacts"])


class ArtifactIn(Schema):
    name: str
    kind: str = "file"
    size: int
    sha256: str


class ArtifactOut(Schema):
    id: int
    name: str
    kind: str
    size: int
    sha256: str
    status: str
    created_at: Iso
    confirmed_at: Iso | None


class ArtifactBegun(Schema):
    artifact: ArtifactOut
    upload: dict[str, Any]


class ArtifactList(Schema):
    artifacts: list[ArtifactOut]
    has_next: bool
    next_cursor: str | None  # pass as ?cursor= for the next page; null on the last


def _absolute(request: HttpRequest, url: str) -> str:
    return url if url.startswith(("http://", "https://")) else request.build_absolute_uri(url)


def _artifact(run: Run, artifact_id: int) -> Artifact:
    return get_object_or_404(Artifact.objects, run=run, pk=artifact_id)


@router.post("/runs/{run_id}/artifacts", auth=ingest_auth, response={200: ArtifactBegun, 201: ArtifactBegun})
def artifact_begin(request: HttpRequest, run_id: str, payload: ArtifactIn) -> Status:
    run = run_for(request, run_id, write=True)
    artifact, plan = services.artifact_begin(
        run=run, name=payload.name, kind=payload.kind, size=payload.size, sha256=payload.sha256
    )
    upload = plan.as_dict()
    if "url" in upload:
        upload["url"] = _absolute(request, upload["url"])
    return Status(200 if plan.method == "none" else 201, {"artifact": artifact, "upload": upload})


@router.post("/runs/{run_id}/artifacts/{artifact_id}/confirm", auth=ingest_auth, response=ArtifactOut)
def artifact_confirm(request: HttpRequest, run_id: str, artifact_id: int) -> Artifact:
    run = run_for(request, run_id, write=True)
    return services.artifact_confirm(artifact=_artifact(run, artifact_id))


@router.get("/runs/{run_id}/artifacts", auth=read_auth, response=ArtifactList)
def artifact_list(request: HttpRequest, run_id: str, limit: int = 100, cursor: str = "",
                  offset: int = 0) -> dict[str, Any]:
    """Newest first; follow `next_cursor`. `offset` is the old paging, still answered for clients that send it."""
    run = run_for(request, run_id)
    limit = max(1, min(limit, 1000))
    rows = Artifact.objects.filter(run=run)
    if offset > 0 and not cursor:
        page = offset_page(rows, keys=newest_first(), order="artifacts", offset=offset, per_page=limit)
    else:
        page = keyset_page(rows, keys=newest_first(), order="artifacts", cursor=cursor, per_page=limit)
    return {"artifacts": page.rows, "has_next": bool(page.next_cursor), "next_cursor": page.next_cursor or None}


@router.get("/runs/{run_id}/artifacts/{artifact_id}/download", auth=read_auth)
def artifact_download(request: HttpRequest, run_id: str, artifact_id: int) -> dict[str, Any]:
    run = run_for(request, run_id)
    url = services.artifact_download_url(artifact=_artifact(run, artifact_id))
    return {"url": _absolute(request, url)}


@router.delete("/runs/{run_id}/artifacts/{artifact_id}", auth=ingest_auth)
def artifact_delete(request: HttpRequest, run_id: str, artifact_id: int) -> HttpResponse:
    run = run_for(request, run_id, write=True)
    services.artifact_delete(artifact=_artifact(run, artifact_id))
    return HttpResponse(status=204)
