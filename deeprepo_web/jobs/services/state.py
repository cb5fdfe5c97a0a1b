"""Shared by every job service: the event log, advisory locks, and what a final state implies."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.accounts.services import api_key_revoke
from deeprepo_web.jobs.models import Job, JobEvent, JobStatus
from deeprepo_web.runs.models import Run, RunStatus
from deeprepo_web.text import clean_text

_JOB_TO_RUN: dict[str, str] = {
    JobStatus.RUNNING: RunStatus.RUNNING,
    JobStatus.SUCCEEDED: RunStatus.FINISHED,
    JobStatus.FAILED: RunStatus.FAILED,
    JobStatus.CANCELLED: RunStatus.CANCELLED,
    JobStatus.LOST: RunStatus.CRASHED,
}


def job_event(job: Job | int, from_status: str, to_status: str, reason: str) -> None:
    job_event_row(job, from_status, to_status, reason).save(force_insert=True)


def job_event_row(job: Job | int, from_status: str, to_status: str, reason: str) -> JobEvent:
    """An event not saved yet (a launch of many saves theirs in one INSERT), its reason cleaned
    and cut like every event's."""
    return JobEvent(job_id=job if isinstance(job, int) else job.pk, from_status=from_status,
                    to_status=to_status, reason=clean_text(reason)[:4000])



@contextlib.contextmanager
def advisory_lock(key: tuple[int, int]) -> Iterator[bool]:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
        held = bool(cur.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with contextlib.suppress(Exception), connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, %s)", key)



def finalize(job_id: int) -> None:
    """After a final state (inside its transaction): revoke the job's key, mirror the run."""
    job = Job.objects.get(pk=job_id)
    if job.api_key_id:
        api_key_revoke(key=ApiKey(pk=job.api_key_id))
    if job.run_id and job.status in _JOB_TO_RUN:
        now = timezone.now()
        Run.objects.filter(pk=job.run_id).exclude(status=_JOB_TO_RUN[job.status]).update(
            status=_JOB_TO_RUN[job.status], finished_at=Coalesce(F("finished_at"), now),
            started_at=Coalesce(F("started_at"), now))
