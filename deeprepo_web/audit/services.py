from __future__ import annotations

from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.audit.context import actor_name
from deeprepo_web.audit.models import AuditEvent

PAGE = 200


def audit_record(*, project: Project | int, action: str, target: str, actor: str | None = None,
                 **detail: Any) -> AuditEvent:
    """Written in the caller's transaction: the row exists exactly when the change does."""
    project_id = project if isinstance(project, int) else project.pk
    return AuditEvent.objects.create(project_id=project_id, action=action, target=str(target)[:300],
                                     actor=(actor or actor_name())[:200], detail=detail)


def audit_page(*, project: Project, before: int | None = None) -> list[AuditEvent]:
    """Newest first, PAGE at a time; `before` is the id of the last row of the previous page."""
    rows = AuditEvent.objects.filter(project=project)
    if before is not None:
        rows = rows.filter(pk__lt=before)
    return list(rows.order_by("-pk")[:PAGE])
