"""The audit log page: project admins only; everyone else gets 404 (accounts.access)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.audit.services import PAGE, audit_page


@require_safe
@login_required
def audit_log(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    raw = request.GET.get("before", "")
    events = audit_page(project=project, before=int(raw) if raw.isdigit() else None)
    more = events[-1].pk if len(events) == PAGE else None
    return render(request, "audit/log.html", {"project": project, "events": events, "more": more})
