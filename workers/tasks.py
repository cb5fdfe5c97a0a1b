"""Thin tasks: fetch by id, return if gone, call a service. Ids in, never objects.

Every task is safe to run twice (acks_late redelivers after a worker dies): the services move
a job only by conditional updates, and dispatch holds a per-job advisory lock.
"""

from __future__ import annotations

from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from workers.backends import BackendError
from workers.celery import app


@app.task(name="deeprepo.ping")
def ping() -> str:
    return "pong"


@app.task(name="deeprepo.artifacts_cleanup", soft_time_limit=600, time_limit=660, ignore_result=True)
def artifacts_cleanup() -> int:
    """Beat: remove uploads never confirmed within DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT (and abort their S3 parts)."""
    from deeprepo_web.artifacts.services import artifacts_cleanup as cleanup

    return cleanup()


# An import reads files already on disk and writes batches that are idempotent; a retry would only
# redo the same work, so none is configured. The soft limit leaves time to record the failure.
@app.task(name="deeprepo.run_import", soft_time_limit=6 * 3600, time_limit=6 * 3600 + 120, acks_late=True)
def run_import(job_id: int) -> str:
    from deeprepo_web.importers.services import import_job_run

    job = import_job_run(job_id=job_id)
    return "skipped" if job is None else job.status


@app.task(name="deeprepo.imports.resend", soft_time_limit=60, time_limit=90, ignore_result=True)
def resend_imports() -> int:
    """Beat: send run_import again for imports whose message or worker was lost (see import_jobs_resend)."""
    from deeprepo_web.importers.services import import_jobs_resend

    return import_jobs_resend()


@app.task(bind=True, name="deeprepo.jobs.dispatch", acks_late=True, max_retries=None,
          soft_time_limit=150, time_limit=180)
def dispatch_job(self: Any, job_id: int) -> str:
    from deeprepo_web.jobs import services

    try:
        return services.job_dispatch(job_id=job_id)
    except services.DispatchRetry as e:
        # Bounded by the job's attempt counter in the service, not by Celery's retry count.
        raise self.retry(countdown=e.countdown) from None


@app.task(bind=True, name="deeprepo.jobs.cancel", acks_late=True, max_retries=5,
          soft_time_limit=90, time_limit=120)
def cancel_job(self: Any, job_id: int) -> str:
    from deeprepo_web.jobs import services

    try:
        return services.job_cancel_on_cluster(job_id=job_id)
    except BackendError as e:
        if e.permanent:
            services.job_cancel_failed(job_id=job_id, message=e.message)
            return f"cancel failed: {e.message}"
        raise self.retry(countdown=min(60, 2 ** (self.request.retries + 1))) from None


@app.task(name="deeprepo.jobs.follow", soft_time_limit=30, time_limit=45, ignore_result=True)
def follow_job(job_id: int, polls_left: int) -> None:
    """Fast polls of a job the cluster has just queued, so RUNNING shows within a second."""
    from deeprepo_web.jobs import services

    try:
        still_queued = services.job_follow(job_id=job_id)
    except BackendError:
        return  # beat's sync follows it anyway
    if still_queued and polls_left > 1:
        follow_job.apply_async((job_id, polls_left - 1), countdown=services.FOLLOW_EVERY)


@app.task(name="deeprepo.jobs.sync", soft_time_limit=120, time_limit=150, ignore_result=True)
def sync_jobs() -> dict[str, int]:
    from deeprepo_web.jobs import services

    try:
        return services.jobs_sync()
    except SoftTimeLimitExceeded:
        return {"timeout": 1}
