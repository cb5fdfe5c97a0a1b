"""A run deleted by any path (the page, the API, a shell) leaves an audit row."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from deeprepo_web.audit.models import Action
from deeprepo_web.audit.services import audit_record
from deeprepo_web.runs.models import Run


@receiver(post_delete, sender=Run, dispatch_uid="audit-run-deleted")
def run_deleted(sender: Any, instance: Run, origin: Any = None, **kwargs: Any) -> None:
    from deeprepo_web.accounts.models import Project

    if isinstance(origin, Project):  # the whole project goes, its audit rows with it
        return
    audit_record(project=instance.project_id, action=Action.RUN_DELETED,
                 target=f"{instance.name or instance.public_id} ({instance.public_id})")
