"""Writes for runs: create, update, finish, delete. The bulk ingest of metrics and rollouts is in ingest/."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.ingest.blobs import blobs_collect
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, BlobRef, IngestRefusal, Run, RunKind, RunStatus

log = logging.getLogger(__name__)

RUN_FIELDS = ("name", "kind", "status", "model", "adapter", "environment", "method", "config", "tags", "notes")


class IngestError(ValueError):
    """Bad input found by a service; the message names the field."""


def run_create(
    *,
    project: Project,
    name: str,
    kind: str = RunKind.TRAIN,
    status: str = RunStatus.RUNNING,
    model: str = "",
    adapter: str = "",
    environment: str = "",
    method: str = "",
    config: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    notes: str = "",
    source: str = "sdk",
    external_id: str = "",
    parent: Run | None = None,
    checkpoint_step: int | None = None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    summary: dict[str, Any] | None = None,
) -> tuple[Run, bool]:
    """Returns (run, created). With an external_id, a retry or re-import returns the same run."""
    fields: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "status": status,
        "model": model,
        "adapter": adapter,
        "environment": environment,
        "method": method,
        "config": config or {},
        "tags": tags or [],
        "notes": notes,
        "parent": parent,
        "checkpoint_step": checkpoint_step,
        # A run created already over (an import of a finished eval) has no start time unless given:
        # the moment of the import is not when it ran.
        "started_at": started_at or (
            timezone.now() if status != RunStatus.QUEUED and status not in FINAL_RUN_STATUSES else None),
        "finished_at": finished_at,
        "summary": summary or {},
    }
    if external_id:
        run, created = Run.objects.get_or_create(
            project=project, source=source, external_id=external_id, defaults=fields
        )
        return run, created
    return Run.objects.create(project=project, source=source, **fields), True


def runs_create_queued(*, project: Project, source: str, runs: list[dict[str, Any]]) -> list[Run]:
    """Many queued runs in one INSERT (a sweep's chunk of jobs): each dict holds name, kind, method,
    config, and may fix its public_id (the caller put it in a command line already); nothing started,
    nothing summarised yet, no external id."""
    made = [Run(project=project, source=source, status=RunStatus.QUEUED, name=r["name"], kind=r["kind"],
                method=r.get("method", ""), config=r.get("config") or {},
                **({"public_id": r["public_id"]} if r.get("public_id") else {})) for r in runs]
    return Run.objects.bulk_create(made)


def run_update(*, run: Run, **changes: Any) -> Run:
    unknown = set(changes) - set(RUN_FIELDS) - {"parent", "checkpoint_step", "summary", "started_at", "finished_at"}
    if unknown:
        raise IngestError(f"unknown run field(s): {', '.join(sorted(unknown))}")
    was_final = run.status in FINAL_RUN_STATUSES
    for field, value in changes.items():
        setattr(run, field, value)
    if changes.get("status") == RunStatus.RUNNING and run.started_at is None:
        run.started_at = timezone.now()
    # It ends now only if it was going (a re-import of a finished run does not end it again).
    if changes.get("status") in FINAL_RUN_STATUSES and run.finished_at is None and not was_final:
        run.finished_at = timezone.now()
    run.save()
    return run


def run_finish(*, run: Run, status: str = RunStatus.FINISHED) -> Run:
    if status not in FINAL_RUN_STATUSES:
        raise IngestError(f"status: {status!r} is not a final status ({', '.join(sorted(FINAL_RUN_STATUSES))})")
    return run_update(run=run, status=status)


# A run that received data this recently counts as live for open pages (explorer.live); the touch
# that records it is skipped while the last one is this fresh, so a busy run costs one UPDATE a while.
TOUCH_EVERY_SECONDS = 2.0


def run_touch(*, run: Run) -> None:
    """Mark that points or rollouts just arrived (Run.updated_at), at most every TOUCH_EVERY_SECONDS."""
    now = timezone.now()
    if run.updated_at and (now - run.updated_at).total_seconds() < TOUCH_EVERY_SECONDS:
        return
    Run.objects.filter(pk=run.pk).update(updated_at=now)
    run.updated_at = now


def runs_rewritten(*, run_ids: Iterable[int]) -> None:
    """Rollouts of these runs changed in place (same ids, so their newest rollout says nothing): a
    rebuild, rewards attached later. Their rollouts_rewritten_at and updated_at move, always, in one
    UPDATE, so what is keyed on them (the run page's GRPO health, report panels' stamps) sees a new
    state. Call it in the transaction that rewrote them: the new rows and the new stamp commit together."""
    ids = sorted(set(run_ids))
    if ids:
        now = timezone.now()
        Run.objects.filter(pk__in=ids).update(updated_at=now, rollouts_rewritten_at=now)


def run_name_free(*, project: Project, name: str, limit: int = 200) -> str:
    """`name`, or `name (2)`, `name (3)` … : the first no run of the project has, so two runs
    launched alike (same template, same minute) can be told apart in every list."""
    taken = set(Run.objects.filter(project=project, name__startswith=name[: limit - 8]).values_list("name", flat=True))
    if name not in taken:
        return name
    n = 2
    while (candidate := f"{name[: limit - 3 - len(str(n))]} ({n})") in taken:
        n += 1
    return candidate


def run_delete(*, run: Run) -> dict[str, int]:
    """Delete a run with its rows and its stored objects; returns counts of what went.

    Objects go first: when the store is down this raises StorageUnavailable and nothing is
    deleted. Blobs are shared by content, so one is removed only when no other run refers to it.
    """
    from deeprepo_web import storage
    from deeprepo_web.runs.signals import run_deleting

    store = storage.backend()
    run_deleting.send(sender=Run, run=run, store=store)
    objects = store.delete_prefix(storage.run_prefix(run.project_id, run.public_id))
    shas = list(BlobRef.objects.filter(run=run).values_list("sha", flat=True))
    with transaction.atomic(), connection.cursor() as cur:
        # The big tables go by set-based SQL (the ORM's cascade would load every row); Metric and
        # MetricRollup have no FK constraint on purpose, so they never cascade by themselves.
        series = "SELECT id FROM runs_metricseries WHERE run_id = %s"
        cur.execute(f"DELETE FROM runs_metric WHERE series_id IN ({series})", [run.pk])
        metrics = cur.rowcount
        cur.execute(f"DELETE FROM runs_metricrollup WHERE series_id IN ({series})", [run.pk])
        rollouts = _rollouts_delete(cur, run.pk)
        run.delete()  # the small rest (series, artifacts, blob refs, other apps' links) through the ORM
    blobs = blobs_collect(shas)  # after the commit: only blobs no other run refers to
    return {"objects": objects, "blobs": blobs, "metrics": metrics, "rollouts": rollouts}


# A run's rollouts and their documents go this many at a time, in id order. One statement for a whole big
# run hashed its ids in batches (past work_mem), so it deleted rows page by page once per batch, and each
# return to a page after a checkpoint wrote the page to the WAL again: for 10^6 rollouts 5.8 GB of WAL and
# 17 s for the documents, against 1.4 GB and 4 s in slices (docs/scale.md, "Deleting a run: in slices").
ROLLOUTS_PER_DELETE = 50_000


def _rollouts_delete(cur: Any, run_pk: int) -> int:
    """Delete the run's rollouts and their turns documents, a slice of ids at a time; returns how many."""
    deleted, after = 0, 0
    while True:
        cur.execute("SELECT id FROM runs_rollout WHERE run_id = %s AND id > %s ORDER BY id OFFSET %s LIMIT 1",
                    [run_pk, after, ROLLOUTS_PER_DELETE - 1])
        last = cur.fetchone()
        span = [after, last[0] if last else 2**63 - 1]
        # The documents' own range bound lets Postgres read only that part of their primary key.
        cur.execute("DELETE FROM runs_rolloutturns WHERE rollout_id > %s AND rollout_id <= %s AND rollout_id IN "
                    "(SELECT id FROM runs_rollout WHERE run_id = %s AND id > %s AND id <= %s)", [*span, run_pk, *span])
        cur.execute("DELETE FROM runs_rollout WHERE run_id = %s AND id > %s AND id <= %s", [run_pk, *span])
        deleted += cur.rowcount
        if last is None:
            return deleted
        after = span[1]


def ingest_refusal_note(*, run: Run, kind: str, error: str) -> None:
    """Remember that a batch of `run` was refused with `error` (counted per distinct error line)."""
    error = error[:500]
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO runs_ingestrefusal (run_id, kind, error, count, first_at, last_at) "
            "VALUES (%s, %s, %s, 1, now(), now()) ON CONFLICT (run_id, kind, error) "
            "DO UPDATE SET count = runs_ingestrefusal.count + 1, last_at = now()",
            [run.pk, kind, error],
        )


def ingest_refusals(*, run: Run) -> list[IngestRefusal]:
    return list(IngestRefusal.objects.filter(run=run).order_by("-last_at")[:5])
