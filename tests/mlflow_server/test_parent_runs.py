"""A nested MLflow run logged here (`mlflow.start_run(nested=True)` sends `mlflow.parentRunId`)
is linked to its parent run (issue 25, item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.runs.models import Run

pytestmark = pytest.mark.django_db


def _post(client: Any, key: str, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
    res = client.post(f"/api/2.0/mlflow/{endpoint}", body, content_type="application/json",
                      headers={"Authorization": f"Bearer {key}"})
    assert res.status_code == 200, res.content
    return res.json()


def test_nested_run_gets_its_parent(client: Any, team: Any) -> None:
    exp = _post(client, team.key, "experiments/create", {"name": "grpo"})["experiment_id"]
    parent_id = _post(client, team.key, "runs/create", {"experiment_id": exp})["run"]["info"]["run_id"]
    child_id = _post(client, team.key, "runs/create", {
        "experiment_id": exp, "run_name": "eval", "tags": [{"key": "mlflow.parentRunId", "value": parent_id}],
    })["run"]["info"]["run_id"]
    child = Run.objects.get(external_id=child_id)
    assert child.parent == Run.objects.get(external_id=parent_id)
