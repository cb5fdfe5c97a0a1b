"""POST /api/v1/imports (multipart upload, ingest key) and GET /api/v1/imports/{id} (status + report)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import File, Form, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile

from deeprepo_client.formats import format_choices
from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.api.auth import ingest_auth, read_auth
from deeprepo_web.api.schemas import Iso
from deeprepo_web.importers.jobs import import_job_create, import_job_enqueue
from deeprepo_web.importers.models import ImportJob, ImportOrigin
from deeprepo_web.importers.uploads import UploadTooLarge

router = Router(tags=["imports"])


class ImportJobOut(Schema):
    id: int
    status: str
    source_name: str
    size: int
    progress: int
    error: str
    report: dict[str, Any]
    created_at: Iso
    finished_at: Iso | None
    url: str

    @staticmethod
    def resolve_url(job: ImportJob) -> str:
        return settings.SITE_URL + reverse("import", args=[job.project.slug])


@router.post("/imports", auth=ingest_auth, response={202: ImportJobOut})
def import_create(request: HttpRequest, files: File[list[UploadedFile]],
                  format: Form[str] = "") -> Status:  # noqa: A002 - the form field's name
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    if format and format not in format_choices():
        raise HttpError(422, f"format: {format!r} is not one of {', '.join(format_choices())}")
    if not files:
        raise HttpError(422, "files: upload at least one file (multipart field 'files')")
    try:
        job = import_job_create(project=key.project, user=key.user,
                                files=[(f.name or "upload", f.chunks()) for f in files], fmt=format,
                                origin=ImportOrigin.API)
    except UploadTooLarge as exc:
        raise HttpError(413, str(exc)) from exc
    import_job_enqueue(job=job)
    job.refresh_from_db()  # the enqueue may have imported it already, or noted that the queue is away
    return Status(202, job)


@router.get("/imports/{import_id}", auth=read_auth, response=ImportJobOut)
def import_detail(request: HttpRequest, import_id: int) -> ImportJob:
    job = get_object_or_404(ImportJob.objects.select_related("project"), pk=import_id)
    access.project_for_principal(request.auth, job.project)  # type: ignore[attr-defined]
    return job
