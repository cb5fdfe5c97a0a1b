"""The import page: an upload form (editors) and the project's import jobs with live progress."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from deeprepo_client.formats import format_choices, format_labels
from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.front.http import STOP_POLLING
from deeprepo_web.importers.jobs import import_job_create, import_job_enqueue
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.importers.uploads import UploadTooLarge

JOBS_SHOWN = 20


def _format_options() -> list[tuple[str, str]]:
    """(value, text) of the Format select: every registered format, labelled from the registry."""
    labels = dict(format_labels(), zip="a folder as .zip")
    return [(name, f"{name}: {labels[name]}" if name in labels else name) for name in format_choices()]





@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    can_write = membership.allows(Role.EDITOR)
    error = ""
    if request.method == "POST":
        if not can_write:
            raise Http404("not allowed")
        files = request.FILES.getlist("files")
        fmt = request.POST.get("format", "")
        if fmt and fmt not in format_choices():
            error = f"format: {fmt!r} is not one of {', '.join(format_choices())}"
        elif not files:
            error = "files: choose a file, a folder as .zip, or several files"
        else:
            try:
                job = import_job_create(project=project, user=request.user,
                                        files=[(f.name or "upload", f.chunks()) for f in files], fmt=fmt)
            except UploadTooLarge as exc:
                error = str(exc)
            else:
                import_job_enqueue(job=job)
                return redirect("import", slug=project.slug)
    jobs = list(ImportJob.objects.filter(project=project).select_related("user").order_by("-created_at")[:JOBS_SHOWN])
    return render(request, "importers/import.html", {
        "project": project, "jobs": jobs, "can_write": can_write, "error": error,
        "formats": _format_options(), "labels": [label for _, label in format_labels()],
    }, status=400 if error else 200)


@require_safe
@login_required
def import_job(request: HttpRequest, slug: str, import_id: int) -> HttpResponse:
    """One job's row (htmx polls it); 286 tells htmx to stop once the job is done."""
    project, _ = access.project_for_user(request.user, slug)
    job = get_object_or_404(ImportJob.objects.select_related("user"), project=project, pk=import_id)
    response = render(request, "importers/import.html#job", {"project": project, "job": job})
    if job.is_final:
        response.status_code = STOP_POLLING
    return response
