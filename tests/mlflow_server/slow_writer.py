"""Logs STEPS steps of two metrics with the real `mlflow` client, a little at a time, so a test can
stop and start the server under it; prints RUN_ID=… first and DONE at the end."""

from __future__ import annotations

import sys
import time

import mlflow


def main() -> None:
    steps = int(sys.argv[1])
    mlflow.set_experiment("restart-exp")
    with mlflow.start_run(run_name="through-a-restart") as run:
        print(f"RUN_ID={run.info.run_id}", flush=True)
        mlflow.log_param("lr", "1e-6")
        for step in range(steps):
            mlflow.log_metrics({"reward": step / steps, "loss": 1 - step / steps}, step=step)
            time.sleep(0.01)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
