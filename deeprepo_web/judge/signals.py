"""Verdicts follow the runs app (it imports no feature): a deletion's confirmation counts the run's verdicts,
which go with it by their foreign key's cascade."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from deeprepo_web.judge.models import Verdict
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.signals import run_contents_counted


@receiver(run_contents_counted, dispatch_uid="judge-verdicts-of-run")
def verdicts_of_run(sender: Any, run: Run, **kwargs: Any) -> dict[str, int]:
    return {"verdicts": Verdict.objects.filter(run=run).count()}
