"""Artifact store housekeeping."""

from __future__ import annotations

from workers.celery import app


@app.task(name="deeprepo.artifacts_cleanup", soft_time_limit=600, time_limit=660, ignore_result=True)
def artifacts_cleanup() -> int:
    """Beat: remove uploads never confirmed within DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT (and abort their S3 parts)."""
    from deeprepo_web.artifacts.services import artifacts_cleanup as cleanup

    return cleanup()
