"""Labels react to the runs app: a rebuilt rollout's turn marks follow their turn; a deletion's
confirmation counts the run's marks."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from deeprepo_web.labels.models import Mark
from deeprepo_web.labels.services import marks_follow_turns
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.signals import rollouts_rebuilt, run_contents_counted


@receiver(rollouts_rebuilt, dispatch_uid="labels-marks-follow-turns")
def marks_follow(sender: Any, rollout_ids: list[int], turn_moves: Any, **kwargs: Any) -> None:
    marks_follow_turns(rollout_ids=rollout_ids, turn_moves=turn_moves)


@receiver(run_contents_counted, dispatch_uid="labels-marks-of-run")
def marks_of_run(sender: Any, run: Run, **kwargs: Any) -> dict[str, int]:
    return {"marks": Mark.objects.filter(run=run).count()}
