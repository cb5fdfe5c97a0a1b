"""The runs app's signals: what it announces so that features above it can react (runs import no
feature, so one that keeps rows about rollouts, like labels' marks or search's documents, listens
here), and the audit row a deleted run leaves."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import Signal, receiver

from deeprepo_web.accounts.models import Project
from deeprepo_web.audit.models import Action
from deeprepo_web.audit.services import audit_record
from deeprepo_web.runs.models import Run

# Sent by `rollouts_replace` inside its transaction, once rebuilt rollouts have their new turns and
# tool calls (the old rows are gone, the new ones have new ids). Arguments: `rollout_ids` (the
# rebuilt rollouts) and `turn_moves(rollout_id) -> {old turn index: new index}` (a turn found again
# maps to where it now is, a rewritten turn to the one that took its place; a turn that went with
# nothing in its place is left out). Receivers write in the same transaction: an error undoes the replace.
rollouts_rebuilt = Signal()

# Sent by `runs.deletion.run_contents` when a deletion's confirmation names what goes: a feature that
# keeps rows about a run (labels' marks, search's documents, artifacts) answers with its counts, a
# dict such as {"marks": 3}. Argument: `run`.
run_contents_counted = Signal()

# Sent by `services.run_delete` before anything is deleted, outside its transaction: a feature that
# keeps something of the run outside the database which the run's store prefix does not cover (an
# artifact's unfinished multipart upload) lets it go. Arguments: `run`, `store` (the object store).
# A receiver that raises (the store is down) stops the deletion, and nothing is deleted.
run_deleting = Signal()


@receiver(post_delete, sender=Run, dispatch_uid="audit-run-deleted")
def run_deleted(sender: Any, instance: Run, origin: Any = None, **kwargs: Any) -> None:
    """A run deleted by any path (the page, the API, a shell) leaves an audit row."""
    if isinstance(origin, Project):  # the whole project goes, its audit rows with it
        return
    audit_record(project=instance.project_id, action=Action.RUN_DELETED,
                 target=f"{instance.name or instance.public_id} ({instance.public_id})")
