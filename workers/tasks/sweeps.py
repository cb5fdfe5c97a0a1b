"""Sweeps: advance one (enqueued when it is created) and beat's tick over all running ones."""

from __future__ import annotations

from celery.exceptions import SoftTimeLimitExceeded

from workers.celery import app


@app.task(name="deeprepo.sweeps.advance", soft_time_limit=120, time_limit=150, ignore_result=True)
def advance_sweep(sweep_id: int) -> dict[str, int]:
    from deeprepo_web.sweeps.services import sweep_advance

    try:
        return sweep_advance(sweep_id=sweep_id)
    except SoftTimeLimitExceeded:
        return {"timeout": 1}  # the next tick carries on from the rows


@app.task(name="deeprepo.sweeps.tick", soft_time_limit=120, time_limit=150, ignore_result=True)
def tick_sweeps() -> dict[str, int]:
    from deeprepo_web.sweeps.services import sweeps_tick

    try:
        return sweeps_tick()
    except SoftTimeLimitExceeded:
        return {"timeout": 1}
