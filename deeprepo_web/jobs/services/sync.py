"""Sync (beat and workers): poll active jobs, apply what the cluster reports, import outputs of finished ones."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from deeprepo_web.importers.jobs import import_job_run_in_place
from deeprepo_web.importers.models import ImportOrigin
from deeprepo_web.jobs.models import ACTIVE_JOB_STATUSES, FINAL_JOB_STATUSES, ClusterKind, Job, JobStatus
from deeprepo_web.jobs.services.clusters import backend_for_cluster
from deeprepo_web.jobs.services.launch import job_enqueue, stale_after
from deeprepo_web.jobs.services.state import advisory_lock, finalize, job_event
from deeprepo_web.runs.models import Run, RunStatus
from deeprepo_web.text import clean_text
from workers.backends import Backend, BackendError, JobState

log = logging.getLogger(__name__)

LOG_TAIL_BYTES = 32_000
# Prefix of Job.error while the cluster cannot be reached (cleared when it answers again).
FOLLOW_ERROR = "cannot follow the job"
_SYNC_LOCK = (7_302, 0)

_STATE_TO_JOB = {
    JobState.PENDING: JobStatus.QUEUED,
    JobState.RUNNING: JobStatus.RUNNING,
    JobState.SUCCEEDED: JobStatus.SUCCEEDED,
    JobState.FAILED: JobStatus.FAILED,
    JobState.CANCELLED: JobStatus.CANCELLED,
    JobState.LOST: JobStatus.LOST,
}


def jobs_sync(*, limit: int = 1000) -> dict[str, int]:
    """Follow every active job once. One pass at a time (advisory lock); beat calls this."""
    counts = {"checked": 0, "changed": 0, "redispatched": 0}
    with advisory_lock(_SYNC_LOCK) as held:
        if not held:
            return counts
        stale = timezone.now() - stale_after()
        # Jobs whose task message was lost (broker restarted, publish failed): send it again.
        # A duplicate is harmless: dispatch moves a job by conditional updates under a per-job lock.
        for job_id, status, external_id in Job.objects.filter(
            Q(status__in=[JobStatus.PENDING, JobStatus.SUBMITTING]) | Q(status=JobStatus.CANCELLING),
            updated_at__lt=stale,
        ).values_list("pk", "status", "external_id")[:100]:
            what = "cancel" if status == JobStatus.CANCELLING and external_id else "dispatch"
            if not job_enqueue(what, job_id, note=False):
                break  # the broker is away; the next pass tries again
            Job.objects.filter(pk=job_id).update(updated_at=timezone.now())
            job_event(job_id, status, status, f"{what} sent again: nothing happened for "
                   f"{stale_after().total_seconds():.0f}s (its task message was lost)")
            counts["redispatched"] += 1
        jobs = list(
            Job.objects.filter(status__in=ACTIVE_JOB_STATUSES).exclude(external_id="")
            .select_related("cluster", "project", "run").order_by("synced_at")[:limit]
        )
        by_cluster: dict[int, list[Job]] = {}
        for job in jobs:
            by_cluster.setdefault(job.cluster_id, []).append(job)
        for group in by_cluster.values():
            try:
                backend = backend_for_cluster(group[0].cluster)
            except BackendError as e:
                for job in group:
                    _note_sync_error(job, e)
                continue
            try:
                for i, job in enumerate(group):
                    counts["checked"] += 1
                    try:
                        counts["changed"] += int(sync_one(job, backend, raise_transient=True))
                    except BackendError as e:
                        # The cluster is unreachable (controller down, network): each further
                        # poll would wait out the same timeout, so say so on the rest at once.
                        for other in group[i:]:
                            _note_sync_error(other, e)
                        break
            finally:
                backend.close()
    return counts


def _note_sync_error(job: Job, e: BackendError) -> None:
    """The cluster did not answer: keep the last known status, say so on the job (once per outage)."""
    message = f"{FOLLOW_ERROR}: {e.message}" + ("" if e.permanent else " (will keep trying)")
    now = timezone.now()
    with transaction.atomic():
        if Job.objects.filter(pk=job.pk).exclude(error__startswith=FOLLOW_ERROR).update(
                error=message, synced_at=now):
            job_event(job, job.status, job.status,
                   f"cluster unreachable, the status shown is the last one it reported: {e.message}")
        else:
            Job.objects.filter(pk=job.pk).update(error=message, synced_at=now)


def sync_one(job: Job, backend: Backend, *, raise_transient: bool = False) -> bool:
    """Poll one job; apply the transition the cluster reports. True if the status changed.

    A cluster that does not answer changes nothing but the job's error line (and one event);
    with raise_transient the caller gets that error instead, to spare the other jobs' polls."""
    if not job.external_id or job.status in FINAL_JOB_STATUSES:
        return False
    try:
        status = backend.state(job.external_id)
        tail = backend.logs(job.external_id, LOG_TAIL_BYTES)
    except BackendError as e:
        if raise_transient and not e.permanent:
            raise
        _note_sync_error(job, e)
        return False
    now = timezone.now()
    tail = clean_text(tail)[-LOG_TAIL_BYTES:]
    updates: dict[str, Any] = {"synced_at": now}
    if tail and tail != job.log_tail:
        updates["log_tail"] = tail
    if job.error.startswith(FOLLOW_ERROR) and Job.objects.filter(
            pk=job.pk, error__startswith=FOLLOW_ERROR).update(error=""):
        job_event(job, job.status, job.status, f"cluster reachable again; it reports the job {status.state}")
    new = _STATE_TO_JOB.get(status.state)
    old = job.status
    if new is None or new == old or (old == JobStatus.CANCELLING and not status.state.is_terminal):
        Job.objects.filter(pk=job.pk).update(**updates)
        return False
    if old == JobStatus.RUNNING and new == JobStatus.QUEUED:
        Job.objects.filter(pk=job.pk).update(**updates)  # requeued by the cluster; keep "running"
        return False
    updates["status"] = new
    if new == JobStatus.RUNNING:
        updates["started_at"] = Coalesce(F("started_at"), now)
    if new in FINAL_JOB_STATUSES:
        updates["finished_at"] = now
        updates["exit_code"] = status.exit_code
        if new in (JobStatus.FAILED, JobStatus.LOST):
            updates["error"] = status.reason or new
        updates["started_at"] = Coalesce(F("started_at"), F("submitted_at"))
    reason = status.reason or str(status.state)
    if new == JobStatus.CANCELLED and old != JobStatus.CANCELLING:
        reason = f"cancelled outside deeprepo ({reason})"
    if status.exit_code is not None and new in FINAL_JOB_STATUSES and "exit" not in reason:
        reason += f" (exit code {status.exit_code})"
    # The transition, its event and the run's mirror land together or not at all.
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=old).update(**updates):
            return False  # someone else moved it first (a cancel, another sync); they recorded it
        job_event(job, old, new, reason)
        if job.run_id and new == JobStatus.RUNNING:
            # The program's own client may already have said "running" (or more); never step back.
            Run.objects.filter(pk=job.run_id, status=RunStatus.QUEUED).update(
                status=RunStatus.RUNNING, started_at=Coalesce(F("started_at"), now))
        if new in FINAL_JOB_STATUSES:
            finalize(job.pk)
    if new == JobStatus.SUCCEEDED and job.template is not None and job.template.import_outputs:
        _import_outputs(Job.objects.select_related("run", "template", "project", "cluster").get(pk=job.pk))
    return True



def _import_outputs(job: Job) -> None:
    if job.cluster.kind != ClusterKind.LOCAL and job.cluster.settings.get("host"):
        job_event(job, job.status, job.status,
                  f"outputs are in {job.output_dir} on {job.cluster.name} (a remote machine): copy them here to import")
        return
    try:
        _, report = import_job_run_in_place(project=job.project, path=job.output_dir, origin=ImportOrigin.JOB,
                                            user=job.created_by)
        job_event(job, job.status, job.status, f"imported outputs from {job.output_dir}: {report}"[:2000])
    except Exception as e:  # noqa: BLE001 - the job itself succeeded; the import problem is shown
        log.exception("import of job %s outputs failed", job.public_id)
        job_event(job, job.status, job.status, f"import of {job.output_dir} failed: {e}")
