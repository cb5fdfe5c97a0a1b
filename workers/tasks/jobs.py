"""Training and eval jobs on clusters: dispatch, follow, cancel, and beat's sync."""

from __future__ import annotations

from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

import workers.presence  # noqa: F401  (the worker's queue heartbeat: signal handlers)
from workers.backends import BackendError
from workers.celery import app


def _queue_of(task: Any) -> Any:
    """The queue this message came from (None: the default): retries and follow-ups stay beside
    the same cluster."""
    return (task.request.delivery_info or {}).get("routing_key") or None


@app.task(bind=True, name="deeprepo.jobs.dispatch", acks_late=True, max_retries=None,
          soft_time_limit=150, time_limit=180)
def dispatch_job(self: Any, job_id: int) -> str:
    from deeprepo_web.jobs.services.dispatch import job_dispatch
    from deeprepo_web.jobs.services.errors import DispatchRetry

    try:
        return job_dispatch(job_id=job_id, worker=str(self.request.hostname or ""))
    except DispatchRetry as e:
        # Bounded by the job's attempt counter in the service, not by Celery's retry count.
        raise self.retry(countdown=e.countdown, queue=_queue_of(self)) from None


@app.task(bind=True, name="deeprepo.jobs.cancel", acks_late=True, max_retries=5,
          soft_time_limit=90, time_limit=120)
def cancel_job(self: Any, job_id: int) -> str:
    from deeprepo_web.jobs.services.dispatch import job_cancel_failed, job_cancel_on_cluster

    try:
        return job_cancel_on_cluster(job_id=job_id)
    except BackendError as e:
        if e.permanent:
            job_cancel_failed(job_id=job_id, message=e.message)
            return f"cancel failed: {e.message}"
        raise self.retry(countdown=min(60, 2 ** (self.request.retries + 1)), queue=_queue_of(self)) from None


@app.task(bind=True, name="deeprepo.jobs.follow", soft_time_limit=30, time_limit=45, ignore_result=True)
def follow_job(self: Any, job_id: int, polls_left: int) -> None:
    """Fast polls of a job the cluster has just queued, so RUNNING shows within a second."""
    from deeprepo_web.jobs.services.dispatch import FOLLOW_EVERY, job_follow

    try:
        still_queued = job_follow(job_id=job_id)
    except BackendError:
        return  # beat's sync follows it anyway
    if still_queued and polls_left > 1:
        follow_job.apply_async((job_id, polls_left - 1), countdown=FOLLOW_EVERY, queue=_queue_of(self))


@app.task(name="deeprepo.jobs.sync", soft_time_limit=60, time_limit=90, ignore_result=True)
def sync_jobs() -> dict[str, int]:
    """Beat's: resend lost tasks, note clusters without a worker, send each cluster its sync."""
    from deeprepo_web.jobs.services.sync import jobs_sync

    try:
        return jobs_sync()
    except SoftTimeLimitExceeded:
        return {"timeout": 1}


@app.task(name="deeprepo.jobs.sync_cluster", soft_time_limit=120, time_limit=150, ignore_result=True)
def sync_cluster(cluster_id: int) -> dict[str, int]:
    """Poll one cluster's active jobs, on the cluster's own queue."""
    from deeprepo_web.jobs.services.sync import jobs_sync_cluster

    try:
        return jobs_sync_cluster(cluster_id=cluster_id)
    except SoftTimeLimitExceeded:
        return {"timeout": 1}
