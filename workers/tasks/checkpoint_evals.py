"""Checkpoint-eval rules: beat's scan launches an eval for each new checkpoint of a watched run."""

from __future__ import annotations

from celery.exceptions import SoftTimeLimitExceeded

from workers.celery import app


@app.task(name="deeprepo.checkpoint_evals.scan", soft_time_limit=120, time_limit=150, ignore_result=True)
def scan_checkpoint_rules() -> dict[str, int]:
    from deeprepo_web.checkpoint_evals.services import rules_scan

    try:
        return rules_scan()
    except SoftTimeLimitExceeded:
        return {"timeout": 1}  # watermarks move per rule: the next scan carries on
