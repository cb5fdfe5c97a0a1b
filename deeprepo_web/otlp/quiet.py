"""OTLP runs end when they go quiet: OTLP sends spans, never "the run is over", so a run that got
nothing for its project's quiet period is finished by beat, with the reason on its page. A span
arriving later opens it again (a paused agent resumed)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.otlp.models import DEFAULT_QUIET_MINUTES, OtlpItem, OtlpQuiet
from deeprepo_web.runs.models import Run, RunStatus

SOURCE = "otlp"
MAX_MINUTES = 60 * 24 * 30
BATCH = 500  # runs finished per beat at most; the next beat takes the rest


class QuietError(ValueError):
    pass


def quiet_reason(minutes: int) -> str:
    return f"Finished by the server: no spans for {minutes} minutes (the project's OTLP quiet period)."


def quiet_set(*, project: Project, quiet_minutes: int) -> OtlpQuiet:
    if not 1 <= quiet_minutes <= MAX_MINUTES:
        raise QuietError(f"quiet_minutes: {quiet_minutes} is not between 1 and {MAX_MINUTES}")
    row, _ = OtlpQuiet.objects.update_or_create(project=project, defaults={"quiet_minutes": quiet_minutes})
    return row


def quiet_minutes(project: Project) -> int:
    row = OtlpQuiet.objects.filter(project=project).first()
    return row.quiet_minutes if row else DEFAULT_QUIET_MINUTES


def otlp_runs_close() -> int:
    """Finish every running OTLP run quiet for longer than its project's period; returns how many."""
    periods = dict(OtlpQuiet.objects.values_list("project_id", "quiet_minutes"))
    project_ids = Run.objects.filter(source=SOURCE, status=RunStatus.RUNNING).values_list("project_id", flat=True)
    closed = 0
    now = timezone.now()
    for project_id in set(project_ids):
        minutes = periods.get(project_id, DEFAULT_QUIET_MINUTES)
        cutoff = now - timedelta(minutes=minutes)
        recent = OtlpItem.objects.filter(run=OuterRef("pk"), received_at__gte=cutoff)
        quiet = (Run.objects.filter(project_id=project_id, source=SOURCE, status=RunStatus.RUNNING,
                                    created_at__lt=cutoff)
                 .exclude(Exists(recent)).values_list("pk", flat=True)[:BATCH])
        for run_id in quiet:
            closed += _close(run_id, minutes, cutoff)
    return closed


def _close(run_id: int, minutes: int, cutoff: object) -> int:
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id, status=RunStatus.RUNNING).first()
        # a span may have arrived between the query and the lock: then the run is not quiet
        if run is None or OtlpItem.objects.filter(run=run, received_at__gte=cutoff).exists():
            return 0
        run.status, run.finished_at = RunStatus.FINISHED, timezone.now()
        run.notes = "\n".join(p for p in (run.notes, quiet_reason(minutes)) if p)
        run.save(update_fields=["status", "finished_at", "notes", "updated_at"])
    return 1


def otlp_run_reopen(*, run: Run) -> None:
    """A span for a run the quiet period finished: it is live again, and no longer says it ended."""
    if run.status != RunStatus.FINISHED or "Finished by the server: no spans" not in run.notes:
        return
    notes = "\n".join(line for line in run.notes.splitlines() if not line.startswith("Finished by the server: no spans"))
    Run.objects.filter(pk=run.pk, status=RunStatus.FINISHED).update(
        status=RunStatus.RUNNING, finished_at=None, notes=notes, updated_at=timezone.now())
    run.status, run.finished_at, run.notes = RunStatus.RUNNING, None, notes
