from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey, Membership, Project, Role
from deeprepo_web.audit.models import Action
from deeprepo_web.audit.services import audit_record


@transaction.atomic
def project_create(*, slug: str, name: str = "", owner: User | None = None) -> Project:
    project = Project.objects.create(slug=slug, name=name or slug)
    if owner is not None:
        Membership.objects.create(user=owner, project=project, role=Role.ADMIN)
    return project


@transaction.atomic
def membership_set(*, project: Project, user: User, role: str, actor: str | None = None) -> Membership:
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    audit_record(project=project, action=Action.MEMBER_SET, target=user.username, actor=actor, role=role)
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: str | None = None) -> None:
    audit_record(project=membership.project_id, action=Action.MEMBER_REMOVED, target=membership.user.username,
                 actor=actor, role=membership.role)
    membership.delete()


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
    with transaction.atomic():
        key = ApiKey.objects.create(
            project=project, user=user, name=name, prefix=prefix, secret_hash=digest,
            scopes=scopes or [], expires_at=expires_at,
        )
        audit_record(project=project, action=Action.KEY_CREATED, target=f"drk_{prefix} {name}".strip(),
                     scopes=", ".join(key.scopes) or "all")
    return key, secret


@transaction.atomic
def api_key_revoke(*, key: ApiKey) -> None:
    if ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        # Callers may pass a bare ApiKey(pk=…) (a job's key at its end): read what the audit row names.
        row = ApiKey.objects.only("project_id", "prefix", "name").get(pk=key.pk)
        audit_record(project=row.project_id, action=Action.KEY_REVOKED, target=f"drk_{row.prefix} {row.name}".strip())
