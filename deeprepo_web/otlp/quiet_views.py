"""The OTLP quiet period, on the project settings page: admins only (everyone else 404)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.otlp.quiet import QuietError, quiet_set


@login_required
@require_POST
def otlp_quiet_set(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    raw = request.POST.get("quiet_minutes", "").strip()
    try:
        if not raw.isdigit():
            raise QuietError(f"quiet_minutes: {raw[:20]!r} is not a whole number of minutes")
        quiet_set(project=project, quiet_minutes=int(raw))
    except QuietError as exc:
        from deeprepo_web.accounts.views import settings_page

        response = settings_page(request, project, otlp_quiet_error=str(exc))
        response.status_code = 400
        return response
    return redirect("project_settings", slug=slug)
