"""A deleted run's search documents go with it (they hold plain ids, no foreign key to cascade)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from deeprepo_web.runs.models import Run
from deeprepo_web.search.models import Doc


@receiver(pre_delete, sender=Run)
def docs_of_deleted_run(sender: Any, instance: Run, **kwargs: Any) -> None:
    Doc.objects.filter(run_id=instance.pk).delete()
