"""The real `mlflow` client, in its own process, logs a run into a live server with nothing but
MLFLOW_TRACKING_URI and the key set: experiment, run, params (one logged again), tags, metrics with
exact values at every step (NaN and ±Infinity too), a dataset input; what is stored is checked."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from deeprepo_web.mlflow_server.models import Experiment
from deeprepo_web.runs.models import Metric, Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

WRITER = Path(__file__).with_name("writer.py")
STEPS = 40


def mlflow_env(url: str, key: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update({"MLFLOW_TRACKING_URI": url, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"})
    if key:
        env["MLFLOW_TRACKING_TOKEN"] = key
    env.update(extra)
    return env


def write(env: dict[str, str], experiment: str = "grpo-exp", steps: int = STEPS) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(WRITER), experiment, str(steps)], env=env, capture_output=True,
                          text=True, timeout=240)


def run_id_of(done: subprocess.CompletedProcess[str]) -> str:
    return next(line[7:] for line in done.stdout.splitlines() if line.startswith("RUN_ID="))


def series(run: Run, key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__run=run, series__key=key).values_list("step", "value"))


def test_a_training_script_logs_through_the_mlflow_client(live_server: Any, team: Any) -> None:
    done = write(mlflow_env(live_server.url, team.key))
    assert done.returncode == 0, done.stderr[-3000:]
    run_id = run_id_of(done)
    run = Run.objects.get(project=team.project, external_id=run_id)
    assert (run.name, run.source, run.status) == ("grpo-live", "mlflow", "finished")
    assert run.finished_at is not None and run.started_at is not None
    exp = Experiment.objects.get(project=team.project, name="grpo-exp")
    assert run.config["_mlflow"]["experiment_id"] == str(exp.pk)
    assert {k: run.config[k] for k in ("lr", "model", "rollout.n", "batch")} == {
        "lr": "2e-6", "model": "tiny-policy", "rollout.n": "4", "batch": "8"}
    assert sorted(run.tags) == ["experiment=grpo-exp", "stage=dev", "team=rl", "via=batch"]
    assert series(run, "train/reward") == {s: round(0.1 + 0.8 * s / 100, 6) for s in range(1, STEPS + 1)}
    assert series(run, "train/kl") == {s: 0.5 / s for s in range(1, STEPS + 1)}
    assert series(run, "eval/accuracy") == {STEPS: 0.75}
    assert math.isnan(series(run, "weird/nan")[0])
    assert series(run, "weird/inf") == {0: math.inf} and series(run, "weird/ninf") == {0: -math.inf}
    [dataset] = run.config["_mlflow"]["inputs"]
    assert (dataset["name"], dataset["context"], bool(dataset["digest"])) == ("gsm8k-mini", "training", True)

    # What the MLflow client reads back is what it wrote.
    got = httpx.get(f"{live_server.url}/api/2.0/mlflow/runs/get", params={"run_id": run_id},
                    headers={"Authorization": f"Bearer {team.key}"}).json()["run"]
    assert got["info"]["status"] == "FINISHED"
    assert got["info"]["artifact_uri"] == f"mlflow-artifacts:/{exp.pk}/{run_id}/artifacts"
    metrics = {m["key"]: (m["value"], m["step"]) for m in got["data"]["metrics"]}
    assert metrics["train/reward"] == (0.42, STEPS) and metrics["weird/nan"] == ("NaN", 0)
    assert {t["key"]: t["value"] for t in got["data"]["tags"]}["mlflow.runName"] == "grpo-live"


def test_search_history_and_lifecycle_through_the_client(live_server: Any, team: Any, monkeypatch: Any) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import ViewType
    from mlflow.exceptions import MlflowException

    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", team.key)
    client = MlflowClient(tracking_uri=live_server.url)
    exp = client.create_experiment("search-exp", tags={"owner": "rl"})
    assert client.get_experiment_by_name("search-exp").tags == {"owner": "rl"}
    assert [e.name for e in client.search_experiments(filter_string="name LIKE 'search-%'")] == ["search-exp"]
    with pytest.raises(MlflowException, match="RESOURCE_ALREADY_EXISTS"):
        client.create_experiment("search-exp")
    runs = [client.create_run(exp, run_name=f"r{i}", tags={"seed": str(i)}) for i in range(3)]
    for step in range(5):
        client.log_metric(runs[0].info.run_id, "loss", 1 / (step + 1), step=step)
    history = client.get_metric_history(runs[0].info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(s, 1 / (s + 1)) for s in range(5)]
    found = client.search_runs([exp], filter_string="tags.seed = '1'")
    assert [r.info.run_name for r in found] == ["r1"]
    assert {r.info.run_name for r in client.search_runs([exp], filter_string="attributes.run_name != 'r1'")} == {"r0", "r2"}
    client.delete_run(runs[2].info.run_id)
    assert {r.info.run_name for r in client.search_runs([exp])} == {"r0", "r1"}
    assert [r.info.run_name for r in client.search_runs([exp], run_view_type=ViewType.DELETED_ONLY)] == ["r2"]
    client.restore_run(runs[2].info.run_id)
    assert len(client.search_runs([exp])) == 3
    with pytest.raises(MlflowException, match="Unsupported filter"):
        client.search_runs([exp], filter_string="metrics.loss < 0.5")
    client.update_run(runs[1].info.run_id, status="FAILED")
    assert Run.objects.get(external_id=runs[1].info.run_id).status == "failed"
