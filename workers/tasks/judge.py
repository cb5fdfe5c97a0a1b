"""Rubric judge jobs: one task per job; it checks for cancellation between rollouts."""

from __future__ import annotations

from workers.celery import app


# Resumable by design (verdicts are stored per rollout and skipped when present): no retry here;
# a person presses Resume after a failure.
@app.task(name="deeprepo.judge.run", soft_time_limit=24 * 3600, time_limit=24 * 3600 + 120, acks_late=True)
def judge_run(job_id: int) -> str:
    from deeprepo_web.judge.runner import judge_job_run

    return judge_job_run(job_id=job_id)
