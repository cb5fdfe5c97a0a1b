"""Deleting a run from its page or the API: what would go (the confirmation names it), then the
deletion itself (`services.run_delete`). A run of up to DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS rollouts
goes within the request; a bigger one is marked (`deletion_requested_at`: the runs table and the run
page say "deleting") and deleted by the worker, in one transaction, so a failure deletes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Sum
from django.utils import timezone

from deeprepo_web.runs.models import BlobRef, MetricSeries, Rollout, Run
from deeprepo_web.runs.signals import run_contents_counted
from workers.queue import enqueue

log = logging.getLogger(__name__)
TASK = "deeprepo.runs.delete"
RESEND_BATCH = 20
LOCK_CLASS = 0x52554E44  # "RUND": advisory locks (class, run id) of deletions under way


@dataclass(frozen=True)
class RunContents:
    """What deleting a run removes (and the eval runs that stay, losing their link to it)."""

    rollouts: int
    turns: int  # the model's (assistant) turns, as each rollout counts them: every message goes with it
    metric_keys: int
    metric_points: int
    search_docs: int
    marks: int
    verdicts: int  # a rubric judge's, on its rollouts
    artifacts: int
    blobs: int  # stored bodies and images no other run uses
    evals_kept: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def run_contents(*, run: Run) -> RunContents:
    kept_elsewhere: dict[str, int] = {}  # the features' rows about this run (runs import no feature)
    for _, counts in run_contents_counted.send(sender=Run, run=run):
        if isinstance(counts, dict):
            kept_elsewhere.update(counts)
    rollouts = Rollout.objects.filter(run=run).aggregate(n=Count("id"), turns=Sum("num_turns"))
    series = MetricSeries.objects.filter(run=run).aggregate(n=Count("id"), points=Sum("count"))
    shared = BlobRef.objects.exclude(run=run).values("sha")
    return RunContents(
        rollouts=rollouts["n"] or 0, turns=rollouts["turns"] or 0,
        metric_keys=series["n"] or 0, metric_points=series["points"] or 0,
        search_docs=kept_elsewhere.get("search_docs", 0), marks=kept_elsewhere.get("marks", 0),
        verdicts=kept_elsewhere.get("verdicts", 0), artifacts=kept_elsewhere.get("artifacts", 0),
        blobs=BlobRef.objects.filter(run=run).exclude(sha__in=shared).count(),
        evals_kept=Run.objects.filter(parent=run).count(),
    )


def run_delete_request(*, run: Run, actor: str, inline_limit: int | None = None) -> bool:
    """Delete `run` now (True), or mark it and hand it to the worker (False) when it holds more than
    `inline_limit` rollouts. A run already marked is not sent twice."""
    from deeprepo_web.runs.services import run_delete

    limit = settings.DEEPREPO_RUN_DELETE_INLINE_ROLLOUTS if inline_limit is None else inline_limit
    if run.deletion_requested_at is None and not Rollout.objects.filter(run=run)[limit:limit + 1].exists():
        run_delete(run=run)
        return True
    with transaction.atomic():
        marked = Run.objects.filter(pk=run.pk, deletion_requested_at__isnull=True).update(
            deletion_requested_at=timezone.now())
        if marked:
            # The audit row names who asked; the worker deletes on their behalf.
            transaction.on_commit(lambda: _send(run.pk, actor))
    return False


def _send(run_pk: int, actor: str) -> bool:
    sent = enqueue(TASK, run_pk, actor)
    if not sent:
        log.warning("run %s: deletion not queued; beat sends it again", run_pk)
    return sent


def run_delete_marked(*, run_pk: int, actor: str) -> dict[str, int] | None:
    """The worker's part: delete the marked run. None when it is gone, was never marked, or another
    worker deletes it now (a resent message): the advisory lock lets one of them do it."""
    from deeprepo_web.audit.context import acting_as
    from deeprepo_web.runs.services import run_delete

    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, run_pk])
        if not cur.fetchone()[0]:
            return None
    try:
        run = Run.objects.filter(pk=run_pk, deletion_requested_at__isnull=False).first()
        if run is None:
            return None
        with acting_as(actor):
            return run_delete(run=run)
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, run_pk])


def run_deletions_resend() -> int:
    """Beat: send again the deletions marked a while ago whose message or worker was lost."""
    stale = timezone.now() - timedelta(seconds=settings.DEEPREPO_RUN_DELETE_STALE_SECONDS)
    marked = Run.objects.filter(deletion_requested_at__lt=stale).order_by("pk").values_list("pk", flat=True)
    sent = 0
    for pk in marked[:RESEND_BATCH]:
        if not _send(pk, "operator (deletion resent)"):
            break
        sent += 1
    return sent
