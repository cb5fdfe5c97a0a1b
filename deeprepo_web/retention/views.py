"""The retention setting, on the project settings page: admins only (everyone else 404)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.accounts.views import settings_page
from deeprepo_web.retention.services import RetentionError, policy_set


@login_required
@require_POST
def retention_set(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    raw = request.POST.get("keep_days", "").strip()
    try:
        if raw and not raw.isdigit():
            raise RetentionError(f"keep_days: {raw[:20]!r} is not a whole number of days")
        policy_set(project=project, keep_days=int(raw) if raw else None)
    except RetentionError as exc:
        response = settings_page(request, project, retention_error=str(exc))
        response.status_code = 400
        return response
    return redirect("project_settings", slug=slug)
