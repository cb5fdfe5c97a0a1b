"""Project roles from the provider's claims (DEEPREPO_OIDC_ROLES_CLAIM through DEEPREPO_OIDC_ROLE_MAP)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from deeprepo_web.accounts.models import ROLE_RANK, Membership, Project, Role
from deeprepo_web.accounts.services import membership_remove, membership_set

logger = logging.getLogger(__name__)


def claim_values(claims: dict[str, Any], path: str) -> set[str]:
    """The claim at `path` ("groups", "realm_access.roles") as a set of strings: a list or one value."""
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, str | int):
        return {str(value)}
    if isinstance(value, list):
        return {str(item) for item in value if isinstance(item, str | int)}
    return set()


def roles_wanted(claims: dict[str, Any]) -> dict[str, str]:
    """{project slug: role} the claims grant; the highest role wins when several values name a project."""
    wanted: dict[str, str] = {}
    for value in claim_values(claims, settings.DEEPREPO_OIDC_ROLES_CLAIM):
        for slug, role in settings.DEEPREPO_OIDC_ROLE_MAP.get(value, []):
            if slug not in wanted or ROLE_RANK[Role(role)] > ROLE_RANK[Role(wanted[slug])]:
                wanted[slug] = role
    return wanted


def sso_roles_sync(*, user: User, claims: dict[str, Any], actor: str) -> dict[Project, str]:
    """Sets the user's role in every project the map names to what the claims grant (none: removed).

    Projects the map does not name are left as their admins set them. Returns {project: role}.
    """
    wanted = roles_wanted(claims)
    governed = {slug for grants in settings.DEEPREPO_OIDC_ROLE_MAP.values() for slug, _ in grants}
    projects = {p.slug: p for p in Project.objects.filter(slug__in=governed)}
    for slug in sorted(set(wanted) - set(projects)):
        logger.warning("DEEPREPO_OIDC_ROLE_MAP names project %r, which does not exist", slug)
    current = {m.project_id: m for m in Membership.objects.filter(user=user, project__in=projects.values())}
    granted: dict[Project, str] = {}
    for slug, project in projects.items():
        role, member = wanted.get(slug), current.get(project.pk)
        if role is not None:
            granted[project] = role
            if member is None or member.role != role:
                membership_set(project=project, user=user, role=role, actor=actor)
        elif member is not None:
            membership_remove(membership=member, actor=actor)
    return granted
