"""Every permission check lives here: membership and role in a project, API keys. Outsiders get 404
so existence never leaks. Objects of a project are fetched by their app (`runs.access` for runs and
rollouts, `get_object_or_404(..., project=...)` elsewhere) and allowed by `membership_check`."""

from __future__ import annotations

import base64
import binascii
from datetime import timedelta
from typing import Any

from django.http import Http404
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey, Membership, Project, Role, hash_key

# last_used_at is a hint for humans, not an audit log: write it at most once a minute per key.
_LAST_USED_RESOLUTION = timedelta(seconds=60)


def membership_for(user: Any, project: Project) -> Membership | None:
    if user is None or not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, project=project).first()


def project_for_user(user: Any, slug: str, *, role: str = Role.VIEWER) -> tuple[Project, Membership]:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise Http404("no such project")
    return project, membership_check(user, project, role)


def membership_check(user: Any, project: Project, role: str) -> Membership:
    """The user's membership of `project` if it holds `role`, else 404. The gate of every object that
    belongs to a project (`runs.access` asks it for runs and rollouts)."""
    membership = membership_for(user, project)
    if membership is None:
        raise Http404("no such project")
    if not membership.allows(role):
        # A member without the role knows the project exists; still 404 for the object.
        raise Http404("not allowed")
    return membership


def projects_for_user(user: Any) -> list[Project]:
    if not user.is_authenticated:
        return []
    return list(Project.objects.filter(memberships__user=user).order_by("slug"))


def can_write(user: Any, project: Project) -> bool:
    membership = membership_for(user, project)
    return membership is not None and membership.allows(Role.EDITOR)


def api_key_from_secret(secret: str) -> ApiKey | None:
    if not secret.startswith("drk_"):
        return None
    key = ApiKey.objects.select_related("project").filter(secret_hash=hash_key(secret)).first()
    if key is None or not key.is_active:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > _LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def api_key_from_authorization(header: str) -> ApiKey | None:
    """The key of an Authorization header: `Bearer <key>`, or `Basic` with the key as the password
    (what MLflow clients send from MLFLOW_TRACKING_USERNAME / _PASSWORD); any user name is taken."""
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer":
        return api_key_from_secret(value)
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return api_key_from_secret(decoded.partition(":")[2])


def key_allows(key: ApiKey, scope: str) -> bool:
    return not key.scopes or scope in key.scopes


def project_for_principal(principal: Any, project: Project) -> None:
    """For the API: 404 unless the API key belongs to `project`, or the session user is a member."""
    if isinstance(principal, ApiKey):
        if principal.project_id != project.pk:
            raise Http404("no such project")
    else:
        membership_check(principal, project, Role.VIEWER)
