"""Beat: MLflow traces whose trace info never came, and experiments' traces runs gone idle."""

from __future__ import annotations

from workers.celery import app


@app.task(name="deeprepo.mlflow.traces_sweep", soft_time_limit=300, time_limit=360, ignore_result=True)
def mlflow_traces_sweep() -> dict[str, int]:
    from deeprepo_web.mlflow_server.sweep import mlflow_traces_sweep as sweep

    done = sweep()
    return {"settled": done.settled, "dropped": done.dropped, "finished": done.finished}
