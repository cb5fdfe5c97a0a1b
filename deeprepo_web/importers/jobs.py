"""Import jobs: uploads (the page and API) are created, run now or on a worker, re-sent when lost;
imports of a path in place (`manage.py import`, a finished job's outputs) are recorded as they run."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.importers.models import ImportJob, ImportOrigin, ImportStatus
from deeprepo_web.importers.pipeline import import_path
from deeprepo_web.importers.report import ImportReport, exc_line
from deeprepo_web.importers.uploads import upload_store
from workers.queue import enqueue

# Shown on a queued job whose task message could not be sent (cleared once it is).
QUEUE_AWAY = "The task queue is unreachable; the import will start once it is back."
RESEND_BATCH = 100  # jobs re-sent per beat pass
# Said on an in-place import whose process died: nothing else can read its path again.
PROCESS_LOST = "The process importing this stopped before it finished; run the import again (nothing is doubled)."


def import_job_create(*, project: Project, user: Any, files: list[tuple[str, Iterable[bytes]]],
                      fmt: str = "", origin: str = ImportOrigin.UPLOAD) -> ImportJob:
    path, size = upload_store(files)
    shown = files[0][0] if len(files) == 1 else (
        f"{len(files)} files ({', '.join(n for n, _ in files[:3])}{'…' if len(files) > 3 else ''})")
    return ImportJob.objects.create(project=project, user=user if getattr(user, "pk", None) else None,
                                    source_name=str(shown)[:1000], path=str(path), size=size, fmt=fmt,
                                    origin=origin)


def import_job_run_in_place(*, project: Project, path: str | Path, fmt: str | None = None,
                            origin: str = ImportOrigin.CLI, user: Any = None) -> tuple[ImportJob, ImportReport]:
    """Import a path where it lies (no upload), listed on the import page like an upload as it runs."""
    p = Path(path).expanduser()
    size = _input_size(p)
    now = timezone.now()
    shown = str(p.resolve())  # not relative to a shell's working directory the page never saw
    job = ImportJob.objects.create(
        project=project, user=user if getattr(user, "pk", None) else None, status=ImportStatus.RUNNING,
        source_name=shown[:1000], path=shown[:2000], size=size, fmt=fmt or "", origin=origin,
        started_at=now, heartbeat_at=now)

    def progress(rows: int) -> None:
        ImportJob.objects.filter(pk=job.pk).update(progress=rows)

    try:
        with _heartbeat(job.pk):
            report = import_path(project=project, path=p, fmt=fmt, progress=progress)
    except Exception as exc:
        ImportJob.objects.filter(pk=job.pk).update(
            status=ImportStatus.FAILED, error=exc_line(exc), finished_at=timezone.now())
        raise
    _finish(job.pk, report)
    job.refresh_from_db()
    return job, report


def _input_size(p: Path) -> int:
    try:
        if p.is_file():
            return p.stat().st_size
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    except OSError:
        return 0


def import_job_enqueue(*, job: ImportJob) -> None:
    """Small uploads import right away (the page shows the report at once); big ones go to Celery."""
    if job.size <= settings.DEEPREPO_IMPORT_INLINE_BYTES:
        transaction.on_commit(lambda: import_job_run(job_id=job.pk))
        return
    transaction.on_commit(functools.partial(import_job_send, job_id=job.pk))


def import_job_send(*, job_id: int) -> bool:
    """Send run_import for a queued job; False if the broker could not be reached.

    The upload is already stored and committed, so a broker that is away (Redis restarting) must
    not fail the request: the job stays queued with a note, and beat sends it again later."""
    if not enqueue("deeprepo.run_import", job_id):
        ImportJob.objects.filter(pk=job_id, status=ImportStatus.QUEUED).update(error=QUEUE_AWAY)
        return False
    ImportJob.objects.filter(pk=job_id, status=ImportStatus.QUEUED).update(sent_at=timezone.now(), error="")
    return True


def import_jobs_resend() -> int:
    """Beat: send run_import again for jobs that lost their message or their worker.

    Still queued a stale window after the last send: the message never reached the broker, or died
    with it (Redis restarted empty). Running with a heartbeat that stopped a stale window ago: the
    worker died mid-import. A job that merely waits behind others gets a duplicate, which is
    harmless: import_job_run claims a job once."""
    stale = _stale_before(timezone.now())
    in_place = ImportJob.objects.exclude(origin__in=(ImportOrigin.UPLOAD, ImportOrigin.API))
    in_place.filter(_worker_lost(stale)).update(
        status=ImportStatus.FAILED, error=PROCESS_LOST, finished_at=timezone.now())
    waiting = ImportJob.objects.filter(origin__in=(ImportOrigin.UPLOAD, ImportOrigin.API))
    waiting = waiting.filter(Q(status=ImportStatus.QUEUED, sent_at__lt=stale) | _worker_lost(stale))
    waiting = waiting.order_by("pk")
    sent = 0
    for job_id in waiting.values_list("pk", flat=True)[:RESEND_BATCH]:
        if not import_job_send(job_id=job_id):
            break  # the broker is still away; the next pass tries again
        sent += 1
    return sent


def _stale_before(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.DEEPREPO_IMPORT_STALE_SECONDS)


def _worker_lost(stale: datetime) -> Q:
    """Running, but its heartbeat stopped a stale window ago: the process importing it died."""
    return Q(status=ImportStatus.RUNNING, heartbeat_at__lt=stale)


@contextmanager
def _heartbeat(job_id: int) -> Iterator[None]:
    """Renew the job's heartbeat from a thread while the import runs, whatever the import is doing
    (a long batch, a slow parse): only a dead process stops it."""
    stop = threading.Event()
    every = max(0.5, settings.DEEPREPO_IMPORT_STALE_SECONDS / 4)

    def beat() -> None:
        try:
            while not stop.wait(every):
                ImportJob.objects.filter(pk=job_id, status=ImportStatus.RUNNING).update(heartbeat_at=timezone.now())
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"deeprepo-import-heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every + 30)


def import_job_run(*, job_id: int) -> ImportJob | None:
    """Run one queued import, or take over one whose worker died (its heartbeat stopped).

    A duplicate (or late) call changes nothing: the claim is conditional. Taking over imports the
    file again from the start; what the dead worker stored is found and not doubled.
    """
    now = timezone.now()
    claimable = (Q(status=ImportStatus.QUEUED) | _worker_lost(_stale_before(now))) & Q(
        origin__in=(ImportOrigin.UPLOAD, ImportOrigin.API))
    if not ImportJob.objects.filter(claimable, pk=job_id).update(
            status=ImportStatus.RUNNING, started_at=now, heartbeat_at=now, error=""):
        return None
    job = ImportJob.objects.select_related("project").get(pk=job_id)

    def progress(rows: int) -> None:
        ImportJob.objects.filter(pk=job_id).update(progress=rows)

    path = Path(job.path)
    root = path.parent if path.is_file() else path
    try:
        with _heartbeat(job_id):
            report = import_path(project=job.project, path=path, fmt=job.fmt or None, progress=progress,
                                 display_root=root, display_name=job.source_name)
    except Exception as exc:  # a bug, not bad input: say so on the page instead of a silent 'running'
        ImportJob.objects.filter(pk=job_id).update(
            status=ImportStatus.FAILED, error=exc_line(exc), finished_at=timezone.now())
        raise
    _finish(job_id, report)
    job.refresh_from_db()
    return job


def _finish(job_id: int, report: ImportReport) -> None:
    status = ImportStatus.DONE if report.imported_anything else ImportStatus.FAILED
    error = "" if report.imported_anything else (
        report.problems[0]["message"] if report.problems else "nothing to import")
    ImportJob.objects.filter(pk=job_id).update(
        status=status, report=report.as_dict(), progress=report.rows, error=error[:2000],
        finished_at=timezone.now())

