from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey, Membership, Project, Role


@transaction.atomic
def project_create(*, slug: str, name: str = "", owner: User | None = None) -> Project:
    project = Project.objects.create(slug=slug, name=name or slug)
    if owner is not None:
        Membership.objects.create(user=owner, project=project, role=Role.ADMIN)
    return project


def membership_set(*, project: Project, user: User, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


def api_key_create(
    *,
    project: Project,
    user: User | None = None,
    name: str = "",
    scopes: list[str] | None = None,
    expires_at: datetime | None = None,
) -> tuple[ApiKey, str]:
    """Returns the key row and the secret, which is never retrievable again."""
    secret, prefix, digest = ApiKey.generate()
    key = ApiKey.objects.create(
        project=project,
        user=user,
        name=name,
        prefix=prefix,
        secret_hash=digest,
        scopes=scopes or [],
        expires_at=expires_at,
    )
    return key, secret


def api_key_revoke(*, key: ApiKey) -> None:
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
