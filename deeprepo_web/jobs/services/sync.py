"""Sync (beat and workers): poll active jobs, apply what the cluster reports, import outputs of finished ones."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from deeprepo_web.importers.jobs import import_job_run_in_place
from deeprepo_web.importers.models import ImportOrigin
from deeprepo_web.jobs.models import (
    ACTIVE_JOB_STATUSES,
    FINAL_JOB_STATUSES,
    WAIT_ERROR,
    Cluster,
    ClusterKind,
    Job,
    JobStatus,
)
from deeprepo_web.jobs.services.clusters import backend_for_cluster
from deeprepo_web.jobs.services.launch import job_enqueue, stale_after
from deeprepo_web.jobs.services.retries import attempt_mark, job_resubmit, retries_exhausted_note, retry_due
from deeprepo_web.jobs.services.state import advisory_lock, finalize, job_event
from deeprepo_web.jobs.services.workers import queues_live, waiting_message
from deeprepo_web.runs.models import Run, RunStatus
from deeprepo_web.text import clean_text
from workers.backends import Backend, BackendError, JobState
from workers.queue import enqueue

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


def jobs_sync() -> dict[str, int]:
    """Beat's pass (any worker): resend lost tasks, mark jobs whose cluster's queue has no worker,
    and send each cluster with active jobs a sync on its own queue, where a worker that reaches
    that cluster polls it (`jobs_sync_cluster`)."""
    counts = {"clusters": 0, "redispatched": 0, "waiting": 0}
    with advisory_lock(_SYNC_LOCK) as held:
        if not held:
            return counts
        live = queues_live()
        busy = list(Job.objects.exclude(status__in=FINAL_JOB_STATUSES).order_by()
                    .values_list("cluster_id", flat=True).distinct())
        clusters = {c.pk: c for c in Cluster.objects.filter(pk__in=busy)}
        dead = {pk for pk, c in clusters.items() if c.task_queue not in live}
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            counts["waiting"] = sum(_note_waiting(c) for pk, c in clusters.items() if pk in dead)
        counts["redispatched"] = _resend_lost(exclude_clusters=dead)
        active = set(Job.objects.filter(status__in=ACTIVE_JOB_STATUSES).exclude(external_id="").order_by()
                     .values_list("cluster_id", flat=True).distinct())
        every = float(settings.DEEPREPO_JOB_SYNC_SECONDS)
        for pk in sorted(active - dead):
            # Superseded by the next beat's message if no worker took it in time.
            if not enqueue("deeprepo.jobs.sync_cluster", pk, queue=clusters[pk].task_queue,
                           expires=max(1.0, every * 2)):
                break
            counts["clusters"] += 1
    return counts


def _resend_lost(*, exclude_clusters: set[int]) -> int:
    """Jobs whose task message was lost (broker restarted, publish failed): send it again.
    A duplicate is harmless: dispatch moves a job by conditional updates under a per-job lock.
    A queue without a worker still holds its message: nothing was lost there."""
    sent = 0
    stale = timezone.now() - stale_after()
    for job_id, status, external_id in Job.objects.filter(
        Q(status__in=[JobStatus.PENDING, JobStatus.SUBMITTING]) | Q(status=JobStatus.CANCELLING),
        updated_at__lt=stale,
    ).exclude(cluster_id__in=exclude_clusters).values_list("pk", "status", "external_id")[:100]:
        what = "cancel" if status == JobStatus.CANCELLING and external_id else "dispatch"
        if not job_enqueue(what, job_id, note=False):
            break  # the broker is away; the next pass tries again
        Job.objects.filter(pk=job_id).update(updated_at=timezone.now())
        job_event(job_id, status, status, f"{what} sent again: nothing happened for "
                  f"{stale_after().total_seconds():.0f}s (its task message was lost)")
        sent += 1
    return sent


def _note_waiting(cluster: Cluster) -> int:
    """Say on each unfinished job of `cluster` (once) that no worker listens on its queue."""
    message = waiting_message(cluster)
    noted = 0
    for job_id, status in (Job.objects.filter(cluster=cluster).exclude(status__in=FINAL_JOB_STATUSES)
                           .exclude(error__startswith=WAIT_ERROR).values_list("pk", "status")[:1000]):
        if Job.objects.filter(pk=job_id, status=status).exclude(error__startswith=WAIT_ERROR).update(
                error=message):
            shown = "" if status in (JobStatus.PENDING, JobStatus.SUBMITTING) else \
                "; the status shown is the last one reported"
            job_event(job_id, status, status, message + shown)
            noted += 1
    return noted


def jobs_sync_cluster(*, cluster_id: int, limit: int = 1000) -> dict[str, int]:
    """Follow every active job of one cluster once (a worker on its queue; one pass at a time)."""
    counts = {"checked": 0, "changed": 0}
    with advisory_lock((_SYNC_LOCK[0], cluster_id)) as held:
        if not held:
            return counts
        group = list(
            Job.objects.filter(cluster_id=cluster_id, status__in=ACTIVE_JOB_STATUSES).exclude(external_id="")
            .select_related("cluster", "project", "run").order_by("synced_at")[:limit]
        )
        if not group:
            return counts
        try:
            backend = backend_for_cluster(group[0].cluster)
        except BackendError as e:
            for job in group:
                _note_sync_error(job, e)
            return counts
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
    if job.error.startswith(WAIT_ERROR) and Job.objects.filter(
            pk=job.pk, error__startswith=WAIT_ERROR).update(error=""):
        job_event(job, job.status, job.status, f"a worker on {job.cluster.name} follows the job again; "
                                               f"the cluster reports it {status.state}")
    new = _STATE_TO_JOB.get(status.state)
    old = job.status
    requeued = status.restarts > job.requeues
    if requeued:
        updates["requeues"] = status.restarts
    if new == JobStatus.QUEUED and (requeued or old in (JobStatus.RUNNING, JobStatus.REQUEUED)):
        new = JobStatus.REQUEUED  # back in the cluster's queue after it ran: say so, with the reason
    if new is None or new == old or (old == JobStatus.CANCELLING and not status.state.is_terminal):
        if Job.objects.filter(pk=job.pk).update(**updates) and requeued and new == old:
            # Requeued and started again between two polls: still worth a line.
            job_event(job, old, old, f"requeued by the cluster and started again (restart {status.restarts}): "
                                     f"{status.reason}")
        return False
    if new in (JobStatus.FAILED, JobStatus.LOST) and retry_due(job, status):
        # Its node died, not the program: a new attempt into the same run (the template's policy).
        return job_resubmit(job=job, status=status, ended=new, at=now)
    updates["status"] = new
    if new == JobStatus.RUNNING:
        updates["started_at"] = Coalesce(F("started_at"), now)
    if new in FINAL_JOB_STATUSES:
        updates["finished_at"] = now
        updates["exit_code"] = status.exit_code
        if new in (JobStatus.FAILED, JobStatus.LOST):
            updates["error"] = (status.reason or new) + retries_exhausted_note(job, status)
        updates["started_at"] = Coalesce(F("started_at"), F("submitted_at"))
    # No reason (a job that simply started) says nothing rather than repeat the state.
    reason = status.reason
    if new == JobStatus.REQUEUED:
        reason = (f"requeued by {job.cluster.name} ({reason or status.state}; restart {status.restarts}): it runs again under the "
                  f"same id {job.external_id} and logs into the same run")
    elif old == JobStatus.REQUEUED and new == JobStatus.RUNNING:
        reason = f"running again after the requeue (restart {status.restarts})"
    if new == JobStatus.CANCELLED and old != JobStatus.CANCELLING:
        reason = f"cancelled outside deeprepo ({reason or status.state})"
    if status.exit_code is not None and new in FINAL_JOB_STATUSES and "exit" not in reason:
        reason = f"{reason} (exit code {status.exit_code})" if reason else f"exit code {status.exit_code}"
    if new in (JobStatus.FAILED, JobStatus.LOST):
        reason += retries_exhausted_note(job, status)
    # The transition, its event and the run's mirror land together or not at all.
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=old).update(**updates):
            return False  # someone else moved it first (a cancel, another sync); they recorded it
        job_event(job, old, new, reason)
        attempt_mark(job=job, state=new, reason=reason, at=now)
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
