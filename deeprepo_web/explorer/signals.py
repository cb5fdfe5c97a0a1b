"""The explorer reacts to the runs app: rollouts rebuilt in place (same ids) drop their run's cached
GRPO health, which is keyed by the newest rollout id and would not notice otherwise."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import receiver

from deeprepo_web.explorer.health import grpo_health_forget
from deeprepo_web.runs.models import Rollout
from deeprepo_web.runs.signals import rollouts_rebuilt


@receiver(rollouts_rebuilt, dispatch_uid="explorer-health-of-rebuilt-rollouts")
def health_forget(sender: Any, rollout_ids: list[int], **kwargs: Any) -> None:
    run_ids = list(Rollout.objects.filter(pk__in=rollout_ids).values_list("run_id", flat=True).distinct())
    # After commit: a page reading before then would cache the old rows under the new generation.
    transaction.on_commit(lambda: grpo_health_forget(run_ids=run_ids))
