"""A training script that logs with the real `mlflow` client, as a trainer would; it knows nothing
of deeprepo: MLFLOW_TRACKING_URI and MLFLOW_TRACKING_TOKEN (or _USERNAME/_PASSWORD) point it here.

usage: writer.py EXPERIMENT STEPS  — prints the MLflow run id on its last line."""

from __future__ import annotations

import math
import sys

import mlflow
import numpy as np
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag


def reward(step: int) -> float:
    return round(0.1 + 0.8 * step / 100, 6)


def main() -> None:
    experiment, steps = sys.argv[1], int(sys.argv[2])
    mlflow.set_experiment(experiment)
    with mlflow.start_run(run_name="grpo-live", tags={"team": "rl"}) as run:
        mlflow.log_params({"lr": "1e-6", "model": "tiny-policy", "rollout.n": 4})
        mlflow.log_param("lr", "2e-6")  # a resumed trainer logs a param again with a new value
        mlflow.set_tag("stage", "dev")
        mlflow.set_tag("drop-me", "x")
        MlflowClient().delete_tag(run.info.run_id, "drop-me")
        for step in range(1, steps + 1):
            mlflow.log_metrics({"train/reward": reward(step), "train/kl": 0.5 / step}, step=step)
        mlflow.log_metric("eval/accuracy", 0.75, step=steps)
        MlflowClient().log_batch(run.info.run_id, metrics=[
            Metric("weird/nan", math.nan, 1_700_000_000_000, 0), Metric("weird/inf", math.inf, 1_700_000_000_000, 0),
            Metric("weird/ninf", -math.inf, 1_700_000_000_000, 0)], params=[Param("batch", "8")], tags=[RunTag("via", "batch")])
        dataset = mlflow.data.from_numpy(np.arange(6).reshape(3, 2), name="gsm8k-mini")
        mlflow.log_input(dataset, context="training")
        print(f"RUN_ID={run.info.run_id}")


if __name__ == "__main__":
    main()
