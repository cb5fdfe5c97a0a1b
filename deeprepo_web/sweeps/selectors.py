"""Reads for the sweep pages: the project's sweeps, one sweep with its trials and counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from deeprepo_web.accounts.models import Project
from deeprepo_web.sweeps.models import Sweep, Trial, TrialStatus

SWEEPS_PAGE = 50
MAX_TRIALS_SHOWN = 1000  # a sweep holds at most 1,000 trials (space.MAX_TRIALS)


def sweep_list(*, project: Project) -> QuerySet[Sweep]:
    return (Sweep.objects.filter(project=project).select_related("template", "cluster")
            .annotate(n_trials=Count("trials"), n_complete=Count("trials", filter=Q(trials__status="complete")),
                      n_pruned=Count("trials", filter=Q(trials__status="pruned")))
            .order_by("-created_at"))


def sweep_get(*, project: Project, sweep_id: str) -> Sweep:
    return get_object_or_404(Sweep.objects.select_related("template", "cluster", "created_by"),
                             project=project, public_id=sweep_id)


@dataclass
class SweepView:
    sweep: Sweep
    trials: list[Trial]
    counts: dict[str, int]
    best: Trial | None
    params: list[str]

    @property
    def launched(self) -> int:
        return len(self.trials)

    @property
    def space_rows(self) -> list[tuple[str, str]]:
        """Each swept parameter as the form wrote it: a list, or a range."""
        rows = []
        for name, e in self.sweep.space.items():
            if "values" in e:
                rows.append((name, ", ".join(str(v) for v in e["values"])))
            else:
                rows.append((name, f"{e['low']} .. {e['high']}{' log' if e.get('log') else ''}"))
        return rows


def sweep_view(*, sweep: Sweep) -> SweepView:
    trials = list(Trial.objects.filter(sweep=sweep).select_related("job", "job__run")
                  .order_by("number")[:MAX_TRIALS_SHOWN])
    counts: dict[str, Any] = {s: 0 for s in TrialStatus.values}
    for t in trials:
        counts[t.status] += 1
    scored = [t for t in trials if t.status == TrialStatus.COMPLETE and t.value is not None]
    best = None
    if scored:
        key = (lambda t: t.value) if sweep.direction == "maximize" else (lambda t: -t.value)
        best = max(scored, key=key)
    return SweepView(sweep=sweep, trials=trials, counts=counts, best=best, params=list(sweep.space))
