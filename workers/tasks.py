"""Thin tasks: fetch by id, return if gone, call a service. Ids in, never objects."""

from __future__ import annotations

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
