"""HTML pages. Thin: check access, call a selector, render one template (or its htmx partial)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from deeprepo_web.accounts import access


@require_safe
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "front/home.html", {"projects": access.projects_for_user(request.user)})


@require_safe
@login_required
def run_redirect(request: HttpRequest, run_id: str) -> HttpResponse:
    """Short link printed by the client: /r/<id>/ -> the run page inside its project."""
    run = access.run_for_user(request.user, run_id)
    return redirect("run", slug=run.project.slug, run_id=run.public_id)
