"""Artifacts through the real `mlflow` client: files uploaded through the `mlflow-artifacts` proxy
are the run's artifacts (bytes round-trip, listing, nested folders); `mlflow.log_table` called
twice on one table adds its rows as rollouts once each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web import storage
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.runs.models import Rollout, Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


@pytest.fixture
def mlflow_here(live_server: Any, team: Any, monkeypatch: Any) -> Any:
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", live_server.url)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", team.key)
    mlflow.set_tracking_uri(live_server.url)
    mlflow.set_experiment("artifacts-exp")  # the module remembers an experiment id of an earlier test's database
    yield mlflow
    if mlflow.active_run():
        mlflow.end_run()


def test_files_round_trip_through_the_artifact_proxy(mlflow_here: Any, team: Any, tmp_path: Path) -> None:
    mlflow = mlflow_here
    blob = os.urandom(300_000)
    (tmp_path / "ckpt.bin").write_bytes(blob)
    with mlflow.start_run(run_name="with-files") as mrun:
        mlflow.log_artifact(str(tmp_path / "ckpt.bin"), artifact_path="checkpoints/step-10")
        mlflow.log_text("hello <b>world</b>", "notes/readme.txt")
        mlflow.log_dict({"lr": 1e-6}, "config.json")
        listed = sorted((f.path, f.is_dir) for f in mlflow.MlflowClient().list_artifacts(mrun.info.run_id))
        nested = [f.path for f in mlflow.MlflowClient().list_artifacts(mrun.info.run_id, "checkpoints/step-10")]
        back = mlflow.artifacts.download_artifacts(run_id=mrun.info.run_id, artifact_path="checkpoints/step-10/ckpt.bin",
                                                  dst_path=str(tmp_path / "down"))
    assert listed == [("checkpoints", True), ("config.json", False), ("notes", True)]
    assert nested == ["checkpoints/step-10/ckpt.bin"]
    assert Path(back).read_bytes() == blob
    run = Run.objects.get(project=team.project, external_id=mrun.info.run_id)
    stored = {a.name: a for a in Artifact.objects.filter(run=run)}
    assert set(stored) == {"checkpoints/step-10/ckpt.bin", "notes/readme.txt", "config.json"}
    assert storage.backend().get_bytes(stored["checkpoints/step-10/ckpt.bin"].storage_key) == blob
    assert stored["notes/readme.txt"].size == len("hello <b>world</b>")


def test_log_table_rows_become_rollouts_once(mlflow_here: Any, team: Any) -> None:
    mlflow = mlflow_here
    with mlflow.start_run(run_name="with-table") as mrun:
        mlflow.log_table({"prompt": ["1+1?", "2+2?"], "completion": ["2", "5"], "reward": [1.0, 0.0]},
                         artifact_file="rollouts/samples.json")
        mlflow.log_table({"prompt": ["3+3?"], "completion": ["6"], "reward": [1.0]},
                         artifact_file="rollouts/samples.json")  # read-modify-write: the table grows to 3 rows
    run = Run.objects.get(project=team.project, external_id=mrun.info.run_id)
    rows = list(Rollout.objects.filter(run=run).order_by("example__key")
                .values_list("example__key", "final_answer", "reward"))
    assert rows == [("1+1?", "2", 1.0), ("2+2?", "5", 0.0), ("3+3?", "6", 1.0)]
    assert Artifact.objects.filter(run=run, name="rollouts/samples.json").count() == 1
    tags = {t["key"] if isinstance(t, dict) else t for t in run.config["_mlflow"]["tags"]}
    assert "mlflow.loggedArtifacts" in tags
