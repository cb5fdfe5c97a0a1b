"""Search documents follow the runs app: a deleted run's documents go with it (they hold plain ids,
no foreign key to cascade); a rebuilt rollout's document is made again from its new rows, in the
transaction that rebuilt it (the indexer reads only rollouts it has not seen)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from deeprepo_web.runs.models import Run
from deeprepo_web.runs.signals import rollouts_rebuilt, run_contents_counted
from deeprepo_web.search.indexer import search_docs_rebuild
from deeprepo_web.search.models import Doc


@receiver(pre_delete, sender=Run)
def docs_of_deleted_run(sender: Any, instance: Run, **kwargs: Any) -> None:
    Doc.objects.filter(run_id=instance.pk).delete()


@receiver(rollouts_rebuilt, dispatch_uid="search-docs-of-rebuilt-rollouts")
def docs_of_rebuilt(sender: Any, rollout_ids: list[int], **kwargs: Any) -> None:
    search_docs_rebuild(rollout_ids)


@receiver(run_contents_counted, dispatch_uid="search-docs-of-run")
def docs_of_run(sender: Any, run: Run, **kwargs: Any) -> dict[str, int]:
    return {"search_docs": Doc.objects.filter(run_id=run.pk).count()}
