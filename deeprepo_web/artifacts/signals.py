"""Artifacts follow the runs app (it imports no feature): a deletion's confirmation counts a run's
artifacts, and a deleted run's unfinished multipart uploads are aborted before its rows go. The
artifacts' rows go with the run by the foreign key's cascade, their objects with the run's prefix."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.signals import run_contents_counted, run_deleting
from deeprepo_web.storage import Backend


@receiver(run_contents_counted, dispatch_uid="artifacts-of-run")
def artifacts_of_run(sender: Any, run: Run, **kwargs: Any) -> dict[str, int]:
    return {"artifacts": Artifact.objects.filter(run=run).count()}


@receiver(run_deleting, dispatch_uid="artifacts-uploads-of-deleted-run")
def uploads_of_deleted_run(sender: Any, run: Run, store: Backend, **kwargs: Any) -> None:
    """A multipart upload under way holds parts that no prefix deletion reaches: abort it first."""
    for key, upload_id in Artifact.objects.filter(run=run).exclude(upload_id="").values_list("storage_key", "upload_id"):
        store.multipart_abort(key, upload_id)
