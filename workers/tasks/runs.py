"""Deleting runs too big to delete within the request, and sending again deletions that were lost."""

from __future__ import annotations

from workers.celery import app


# One transaction per run: a retry redoes it whole, and a run already gone is a no-op. No automatic
# retry; beat's resend covers a lost message or a dead worker.
@app.task(name="deeprepo.runs.delete", soft_time_limit=3600, time_limit=3660, acks_late=True, ignore_result=True)
def run_delete(run_pk: int, actor: str) -> bool:
    from deeprepo_web.runs.deletion import run_delete_marked

    return run_delete_marked(run_pk=run_pk, actor=actor) is not None


@app.task(name="deeprepo.runs.delete_resend", soft_time_limit=60, time_limit=90, ignore_result=True)
def run_deletions_resend() -> int:
    from deeprepo_web.runs.deletion import run_deletions_resend as resend

    return resend()
