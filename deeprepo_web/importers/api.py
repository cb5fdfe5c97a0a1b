"""POST /api/v1/imports (multipart upload, ingest key) and GET /api/v1/imports/{id} (status + report)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import File, Form, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile

from deeprepo_client.formats import FORMATS
from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.importers.services import UploadTooLarge, import_job_create, import_job_enqueue

router = Router(tags=["imports"])


def job_out(job: ImportJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "status": job.status,
        "source_name": job.source_name,
        "size": job.size,
        "progress": job.progress,
        "error": job.error,
        "report": job.report,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "url": f"{settings.SITE_URL}/p/{job.project.slug}/import/",
    }


def register(api_router: Router, key_auth: Any, read_auth: Any) -> None:
    """Called by api/views.py with its auth objects, so both modules share one auth setup."""

    @api_router.post("/imports", auth=key_auth, response={202: dict})
    def import_create(request: HttpRequest, files: File[list[UploadedFile]],
                      format: Form[str] = "") -> Status:  # noqa: A002 - the form field's name
        key: ApiKey = request.auth  # type: ignore[attr-defined]
        if not access.key_allows(key, "ingest"):
            raise HttpError(403, "this API key may not write")
        if format and format not in FORMATS and format != "zip":
            raise HttpError(422, f"format: {format!r} is not one of {', '.join(sorted([*FORMATS, 'zip']))}")
        if not files:
            raise HttpError(422, "files: upload at least one file (multipart field 'files')")
        try:
            job = import_job_create(project=key.project, user=key.user,
                                    files=[(f.name or "upload", f.chunks()) for f in files], fmt=format)
        except UploadTooLarge as exc:
            raise HttpError(413, str(exc)) from exc
        import_job_enqueue(job=job)
        job.refresh_from_db()  # the enqueue may have imported it already, or noted that the queue is away
        return Status(202, job_out(job))

    @api_router.get("/imports/{import_id}", auth=read_auth)
    def import_detail(request: HttpRequest, import_id: int) -> dict[str, Any]:
        principal = request.auth  # type: ignore[attr-defined]
        job = ImportJob.objects.select_related("project").filter(pk=import_id).first()
        if job is None:
            raise HttpError(404, "not found")
        if isinstance(principal, ApiKey):
            if job.project_id != principal.project_id:
                raise HttpError(404, "not found")
        else:
            access.project_for_user(principal, job.project.slug)
        return job_out(job)
