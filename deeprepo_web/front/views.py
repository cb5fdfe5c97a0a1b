"""HTML pages. Thin: check access, call a selector, render one template (or its htmx partial)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from deeprepo_web.accounts import access
from deeprepo_web.runs import selectors


@require_safe
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "front/home.html", {"projects": access.projects_for_user(request.user)})


@require_safe
@login_required
def project(request: HttpRequest, slug: str) -> HttpResponse:
    proj, membership = access.project_for_user(request.user, slug)
    runs = selectors.run_list(project=proj)[:200]
    return render(request, "front/project.html", {"project": proj, "membership": membership, "runs": runs})


@require_safe
@login_required
def run_detail(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = access.run_for_user(request.user, run_id)
    if run.project.slug != slug:
        raise Http404("no such run")
    return render(
        request,
        "front/run.html",
        {"project": run.project, "run": run, "keys": selectors.series_keys(run=run)},
    )


@require_safe
@login_required
def run_redirect(request: HttpRequest, run_id: str) -> HttpResponse:
    """Short link printed by the client: /r/<id>/ -> the run page inside its project."""
    run = access.run_for_user(request.user, run_id)
    return redirect("run", slug=run.project.slug, run_id=run.public_id)
