"""Beat: OTLP runs that went quiet for their project's period are finished."""

from __future__ import annotations

from workers.celery import app


@app.task(name="deeprepo.otlp.close_quiet_runs", soft_time_limit=120, time_limit=150, ignore_result=True)
def otlp_runs_close() -> int:
    from deeprepo_web.otlp.quiet import otlp_runs_close as close

    return close()
