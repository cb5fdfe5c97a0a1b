"""Evals and child runs are linked to their parent run by every importer that knows it (issue 25, item 4):
MLflow nested runs (`mlflow.parentRunId`), and framework eval folders imported after their train run."""

from __future__ import annotations

import json
import shutil

from deeprepo_web.runs.models import Run

EXPORT_RUN = "431b6c05612444889a239d2d5c92b323"


def _child_export(samples, dst, child_id: str = "c" * 32):
    """An mlflow-export-import experiment folder with a nested run (an eval of the training run)."""
    shutil.copytree(samples / "mlflow" / "export-experiment", dst)
    src = dst / EXPORT_RUN
    child = dst / child_id
    (child / "artifacts").mkdir(parents=True)
    doc = json.loads((src / "run.json").read_text())
    doc["mlflow"]["info"].update(run_id=child_id, run_name="eval-child")
    doc["mlflow"]["tags"] = {"mlflow.parentRunId": EXPORT_RUN, "mlflow.runName": "eval-child"}
    (child / "run.json").write_text(json.dumps(doc))
    return child


def test_mlflow_child_run_is_linked_to_its_parent(samples, do_import, tmp_path):
    _child_export(samples, tmp_path / "exp")
    report = do_import(tmp_path / "exp")
    assert not report.problems, report.problems
    parent = Run.objects.get(source="mlflow", external_id=EXPORT_RUN)
    child = Run.objects.get(source="mlflow", external_id="c" * 32)
    assert child.parent_id == parent.pk and parent.parent_id is None


def test_mlflow_child_imported_after_its_parent_is_linked(samples, do_import, tmp_path):
    assert not do_import(samples / "mlflow" / "export-run").problems
    child = _child_export(samples, tmp_path / "exp")
    shutil.rmtree(tmp_path / "exp" / EXPORT_RUN)
    report = do_import(child)
    assert not report.problems, report.problems
    assert Run.objects.get(external_id="c" * 32).parent == Run.objects.get(source="mlflow", external_id=EXPORT_RUN)


def test_areal_eval_folder_imported_after_its_train_run_is_linked(samples, do_import, tmp_path):
    src = samples / "areal" / "logs" / "root" / "gsm8k-grpo" / "trial0"
    first = tmp_path / "a" / "gsm8k-grpo" / "trial0"
    shutil.copytree(src / "rollout", first / "rollout")
    later = tmp_path / "b" / "gsm8k-grpo" / "trial0"
    shutil.copytree(src / "eval-rollout", later / "eval-rollout")
    assert not do_import(first).problems
    assert not do_import(later).problems
    train = Run.objects.get(source="areal", kind="train")
    ev = Run.objects.get(source="areal", kind="eval")
    assert (ev.parent_id, ev.checkpoint_step) == (train.pk, 2)
