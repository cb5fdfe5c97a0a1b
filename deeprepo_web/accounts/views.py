"""Project settings: members and API keys. Admins only; everyone else gets 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey, Membership, Project, Role
from deeprepo_web.accounts.services import api_key_create, api_key_revoke, membership_remove, membership_set
from deeprepo_web.replica.health import replica_state


def settings_page(request: HttpRequest, project: Project, **extra: object) -> HttpResponse:
    """The settings page with `extra` in its context (a form's error); features' sections (retention)
    fetch their own data through their template tags."""
    context = {
        "project": project,
        "memberships": Membership.objects.filter(project=project).select_related("user").order_by("user__username"),
        "keys": ApiKey.objects.filter(project=project).select_related("user").order_by("-created_at")[:200],
        "roles": Role.choices,
        "replica": replica_state(),
        **extra,
    }
    return render(request, "accounts/settings.html", context)


@require_safe
@login_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    return settings_page(request, project)


@login_required
@require_POST
def key_create(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    name = request.POST.get("name", "").strip()[:200] or "unnamed"
    scopes = [s for s in request.POST.getlist("scopes") if s in ("ingest", "read")]
    _, secret = api_key_create(project=project, user=request.user, name=name, scopes=scopes)  # type: ignore[arg-type]
    # The secret is rendered once, in this response only.
    return settings_page(request, project, new_key=secret, new_key_name=name)


@login_required
@require_POST
def key_revoke(request: HttpRequest, slug: str, key_id: int) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    api_key_revoke(key=get_object_or_404(ApiKey.objects, project=project, pk=key_id))
    return redirect("project_settings", slug=slug)


@login_required
@require_POST
def member_set(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    username = request.POST.get("username", "").strip()
    role = request.POST.get("role", "")
    user = User.objects.filter(username=username).first()
    if user is None or role not in Role.values:
        return settings_page(request, project, member_error=f"no user named {username!r}" if user is None
                     else f"unknown role {role!r}")
    if user == request.user and role != Role.ADMIN:
        return settings_page(request, project, member_error="you cannot lower your own role")
    membership_set(project=project, user=user, role=role)
    return redirect("project_settings", slug=slug)


@login_required
@require_POST
def member_remove(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    membership = get_object_or_404(Membership.objects, project=project, pk=membership_id)
    if membership.user_id == request.user.pk:
        return settings_page(request, project, member_error="you cannot remove yourself")
    membership_remove(membership=membership)
    return redirect("project_settings", slug=slug)
