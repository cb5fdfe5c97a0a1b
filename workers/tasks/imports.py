"""Imports of uploaded files, and re-sending the ones whose message or worker was lost."""

from __future__ import annotations

from workers.celery import app


# An import reads files already on disk and writes batches that are idempotent; a retry would only
# redo the same work, so none is configured. The soft limit leaves time to record the failure.
@app.task(name="deeprepo.run_import", soft_time_limit=6 * 3600, time_limit=6 * 3600 + 120, acks_late=True)
def run_import(job_id: int) -> str:
    from deeprepo_web.importers.jobs import import_job_run

    job = import_job_run(job_id=job_id)
    return "skipped" if job is None else job.status


@app.task(name="deeprepo.imports.resend", soft_time_limit=60, time_limit=90, ignore_result=True)
def resend_imports() -> int:
    """Beat: send run_import again for imports whose message or worker was lost (see import_jobs_resend)."""
    from deeprepo_web.importers.jobs import import_jobs_resend

    return import_jobs_resend()
