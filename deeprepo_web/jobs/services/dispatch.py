"""Dispatch (a worker): submit a job to its cluster, once, under a per-job lock; retry what is transient."""

from __future__ import annotations

import contextlib
import logging
import random
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.accounts.services import api_key_create, api_key_revoke
from deeprepo_web.jobs.models import Job, JobStatus
from deeprepo_web.jobs.services.clusters import backend_for_cluster
from deeprepo_web.jobs.services.errors import DispatchRetry
from deeprepo_web.jobs.services.retries import attempt_key, attempt_open
from deeprepo_web.jobs.services.state import advisory_lock, finalize, job_event
from deeprepo_web.jobs.services.sync import sync_one
from workers.backends import Backend, BackendError, JobSpec, Resources
from workers.queue import enqueue

log = logging.getLogger(__name__)

_LOCK_NAMESPACE = 7_301  # pg advisory locks: (namespace, job id)
# After submit, a queued job is polled this often for this many times (then beat takes over).
FOLLOW_EVERY = 0.5
FOLLOW_POLLS = 8


def _spec(job: Job, api_secret: str) -> JobSpec:
    cluster = job.cluster
    url = str(cluster.settings.get("deeprepo_url") or settings.SITE_URL).rstrip("/")
    env = {
        "DEEPREPO_URL": url,
        "DEEPREPO_API_KEY": api_secret,
        "DEEPREPO_RUN_ID": job.run.public_id if job.run else "",
        "DEEPREPO_PROJECT": job.project.slug,
        "DEEPREPO_JOB_ID": job.public_id,
        "DEEPREPO_OUTPUT_DIR": job.output_dir,
        "DEEPREPO_JOB_ATTEMPT": str(job.node_retries + 1),  # > 1: resubmitted after a node failure
        "PYTHONUNBUFFERED": "1",  # the log tail should show prints as they happen
    }
    key = attempt_key(job)
    return JobSpec(
        job_id=key, name=f"deeprepo-{key}", command=job.command, env=env,
        workdir=str(cluster.settings.get("workdir") or "") or None, resources=Resources(**job.resources),
    )


def _job_key(job: Job) -> str:
    """A fresh API key for this attempt, valid for this job's project only and revoked at its end."""
    if job.api_key_id:
        api_key_revoke(key=ApiKey(pk=job.api_key_id))
    key, secret = api_key_create(
        project=job.project, user=job.created_by, name=f"job {job.public_id}", scopes=["ingest", "read"],
        # A backstop only: the key is revoked as soon as the job reaches a final state.
        expires_at=timezone.now() + timedelta(days=14),
    )
    Job.objects.filter(pk=job.pk).update(api_key=key)
    return secret


def _retry_delay(attempt: int) -> float:
    base = float(settings.DEEPREPO_JOB_RETRY_SECONDS)
    return min(300.0, base * 2 ** max(0, attempt - 1)) * random.uniform(0.8, 1.2)


def job_dispatch(*, job_id: int, worker: str = "") -> str:
    """Submit the job to its cluster. Returns what happened (for the task log).

    Raises DispatchRetry for a transient error while attempts remain."""
    with advisory_lock((_LOCK_NAMESPACE, job_id)) as held:
        if not held:
            return "busy: another worker is dispatching this job"
        job = Job.objects.filter(pk=job_id).select_related("cluster", "project", "run", "created_by").first()
        if job is None:
            return "gone"
        recovering = False
        if Job.objects.filter(pk=job_id, status=JobStatus.PENDING).update(
            status=JobStatus.SUBMITTING, attempts=F("attempts") + 1
        ):
            # Dispatch attempts count from 1 again after a node-failure retry: say which job attempt it is.
            again = f" (job attempt {job.node_retries + 1})" if job.node_retries else ""
            job_event(job, JobStatus.PENDING, JobStatus.SUBMITTING, f"dispatch attempt {job.attempts + 1}{again}")
        elif job.status in (JobStatus.SUBMITTING, JobStatus.CANCELLING) and not job.external_id:
            # We hold the lock, so whoever set SUBMITTING is gone (worker killed mid-submit).
            recovering = True
            job_event(job, job.status, job.status,
                   "a previous dispatch was interrupted; looking for the job on the cluster before submitting")
        else:
            return f"nothing to do: job is {job.status}"
        job.refresh_from_db()
        try:
            backend = backend_for_cluster(job.cluster)
        except BackendError as e:
            _dispatch_failed(job, e)
            return f"failed: {e.message}"
        try:
            return _submit(job, backend, recovering, worker)
        finally:
            backend.close()


def _submit(job: Job, backend: Backend, recovering: bool, worker: str = "") -> str:
    try:
        external_id = None
        if recovering or job.attempts > 1:
            # An earlier attempt may have reached the cluster before it died or timed out.
            external_id = backend.find(_spec(job, ""))
        if external_id:
            how = f"found on the cluster as {external_id} (adopted, not submitted again)"
        elif job.status == JobStatus.CANCELLING:
            with transaction.atomic():
                if Job.objects.filter(pk=job.pk, status=JobStatus.CANCELLING).update(
                        status=JobStatus.CANCELLED, finished_at=timezone.now()):
                    job_event(job, JobStatus.CANCELLING, JobStatus.CANCELLED, "cancelled before it reached the cluster")
                    finalize(job.pk)
            return "cancelled before submit"
        else:
            spec = _spec(job, "")
            # What the cluster cannot give fails here, with its reason, instead of queueing forever.
            backend.check_resources(spec.resources)
            external_id = backend.submit(_spec(job, _job_key(job)))
            how = f"submitted to {job.cluster.name} as {external_id}"
        if worker:
            how += f" by worker {worker}"
    except BackendError as e:
        return _dispatch_failed(job, e)
    now = timezone.now()
    if Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUBMITTING, JobStatus.CANCELLING]).update(
            external_id=external_id, submitted_at=now, error=""):
        attempt_open(job=job, external_id=external_id, at=now)
    if Job.objects.filter(pk=job.pk, status=JobStatus.SUBMITTING).update(status=JobStatus.QUEUED):
        job_event(job, JobStatus.SUBMITTING, JobStatus.QUEUED, how)
    else:
        # Cancelled while we were submitting: carry it out now that the cluster knows the job.
        job_event(job, JobStatus.CANCELLING, JobStatus.CANCELLING, how)
        with contextlib.suppress(BackendError):
            backend.cancel(external_id)
    job.refresh_from_db()
    # Look once right away, so a job that starts at once shows running without waiting for beat;
    # if the cluster still queues it, look again briefly at a faster pace than beat's.
    sync_one(job, backend)
    job.refresh_from_db()
    if job.status == JobStatus.QUEUED:
        # If the broker is away, beat's sync follows the job anyway.
        enqueue("deeprepo.jobs.follow", job.pk, FOLLOW_POLLS, countdown=FOLLOW_EVERY, queue=job.cluster.task_queue)
    return how


def job_follow(*, job_id: int) -> bool:
    """One quick poll of a freshly queued job; True while it is still queued."""
    job = Job.objects.filter(pk=job_id).select_related("cluster", "project", "run").first()
    if job is None or job.status != JobStatus.QUEUED or not job.external_id:
        return False
    with backend_for_cluster(job.cluster) as backend:
        sync_one(job, backend)
    job.refresh_from_db()
    return job.status == JobStatus.QUEUED


def _dispatch_failed(job: Job, e: BackendError) -> str:
    max_attempts = int(settings.DEEPREPO_JOB_DISPATCH_ATTEMPTS)
    job.refresh_from_db()
    if not e.permanent and job.attempts < max_attempts and job.status == JobStatus.SUBMITTING:
        delay = _retry_delay(job.attempts)
        if Job.objects.filter(pk=job.pk, status=JobStatus.SUBMITTING).update(status=JobStatus.PENDING,
                                                                              error=e.message):
            job_event(job, JobStatus.SUBMITTING, JobStatus.PENDING,
                   f"attempt {job.attempts} of {max_attempts} failed: {e.message}; retrying in {delay:.0f}s")
            raise DispatchRetry(e.message, delay)
        return f"attempt failed and the job moved on ({job.status})"
    reason = e.message if e.permanent else f"gave up after {job.attempts} attempts: {e.message}"
    for status in (JobStatus.SUBMITTING, JobStatus.CANCELLING):
        final = JobStatus.FAILED if status == JobStatus.SUBMITTING else JobStatus.CANCELLED
        with transaction.atomic():
            moved = Job.objects.filter(pk=job.pk, status=status).update(status=final, error=reason,
                                                                        finished_at=timezone.now())
            if moved:
                job_event(job, status, final, reason)
                finalize(job.pk)
        if moved:
            break
    return f"failed: {reason}"


def job_cancel_on_cluster(*, job_id: int) -> str:
    job = Job.objects.filter(pk=job_id).select_related("cluster", "project", "run").first()
    if job is None or job.status != JobStatus.CANCELLING:
        return "nothing to do"
    if not job.external_id:
        return "not on the cluster yet; dispatch will cancel it"
    with backend_for_cluster(job.cluster) as backend:
        backend.cancel(job.external_id)
        sync_one(job, backend)
    return "cancel sent"



def job_cancel_failed(*, job_id: int, message: str) -> None:
    """The cluster refused the cancel for good: say so and keep following the job."""
    if Job.objects.filter(pk=job_id, status=JobStatus.CANCELLING).update(
        status=JobStatus.RUNNING, error=f"cancel failed: {message}"
    ):
        job_event(job_id, JobStatus.CANCELLING, JobStatus.RUNNING, f"cancel failed: {message}")
