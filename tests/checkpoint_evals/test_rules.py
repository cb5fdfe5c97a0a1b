"""Checkpoint-eval rules against real rows: what a scan launches, the cap, and refused rules.

No worker: the scan is called as beat calls it; jobs stay pending (the test transaction never
commits). The run the demo job really evaluates end to end is test_demo_checkpoints.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.artifacts.services import artifact_store_file
from deeprepo_web.checkpoint_evals.errors import RuleInputError
from deeprepo_web.checkpoint_evals.models import CheckpointEval, CheckpointRule
from deeprepo_web.checkpoint_evals.services import rule_create, rule_scan, rules_scan
from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.models import Run
from tests.jobs.conftest import builtin

pytestmark = pytest.mark.django_db


def _training(team: Any, cluster: Any) -> Any:
    return job_launch(project=team.project, template=builtin("demo-grpo"), cluster=cluster,
                      params={"checkpoint_every": 10}, user=team.owner)


def test_steps_rule_launching_hundreds_is_capped_and_says_so(team: Any, local_cluster: Any) -> None:
    job = _training(team, local_cluster)
    metrics_ingest(run=job.run, points=[{"step": s, "values": {"loss": 1.0}} for s in range(0, 5001, 5)])
    rule = rule_create(run=job.run, template=builtin("demo-grpo-eval"), cluster=local_cluster, trigger="steps",
                       every_steps=10, path_param="checkpoint", step_param="step",
                       path_template="{output_dir}/ckpt/step-{step}", max_at_once=10, user=team.owner)
    assert rule_scan(rule=rule) == 10
    rule.refresh_from_db()
    assert rule.note.startswith("501 checkpoints appeared at once; evaluated the newest 10 (steps 4910, 4920,")
    assert "skipped 491" in rule.note and "at most 10 evals at a time" in rule.note
    evals = list(CheckpointEval.objects.filter(rule=rule).select_related("job__run"))
    assert [e.step for e in evals] == list(range(4910, 5001, 10))
    last = evals[-1]
    assert last.job.parameters == {"checkpoint": f"{job.output_dir}/ckpt/step-5000", "step": 5000,
                                   "eval_examples": 6, "eval_rollouts": 4}
    # Linked where the run page and the Checkpoints tab look: parent + checkpoint step.
    assert set(Run.objects.filter(parent=job.run).values_list("checkpoint_step", flat=True)) == set(range(4910, 5001, 10))
    assert last.job.run.kind == "eval"

    assert rules_scan()["launched"] == 0  # nothing new
    metrics_ingest(run=job.run, points=[{"step": 5010, "values": {"loss": 0.5}}])
    assert rules_scan()["launched"] == 1
    assert CheckpointEval.objects.filter(rule=rule).latest("step").step == 5010


def test_artifact_rule_launches_one_eval_per_checkpoint_with_its_path(team: Any, local_cluster: Any,
                                                                      tmp_path: Path) -> None:
    job = _training(team, local_cluster)
    rule = rule_create(run=job.run, template=builtin("demo-grpo-eval"), cluster=local_cluster,
                       path_param="checkpoint", step_param="step", params={"eval_examples": 3})
    file = tmp_path / "w.npz"
    file.write_bytes(b"weights")
    artifact_store_file(run=job.run, name="checkpoints/step-000020.npz", kind="checkpoint", path=file)
    artifact_store_file(run=job.run, name="train.log", kind="log", path=file)  # not a checkpoint
    assert rule_scan(rule=rule) == 1
    ev = CheckpointEval.objects.select_related("job__run").get(rule=rule)
    assert ev.step == 20 and ev.path == f"{job.output_dir}/checkpoints/step-000020.npz"
    assert ev.job.parameters["checkpoint"] == ev.path and ev.job.parameters["eval_examples"] == 3
    assert ev.job.run.parent_id == job.run.pk and ev.job.run.checkpoint_step == 20
    # The same checkpoint logged again (a re-upload under a new name with the same step) is not evaluated twice.
    artifact_store_file(run=job.run, name="checkpoints/again-step-20.npz", kind="checkpoint", path=file)
    assert rule_scan(rule=rule) == 0
    assert CheckpointEval.objects.filter(rule=rule).count() == 1


@pytest.mark.parametrize(("kw", "field", "says"), [
    ({"template": "demo-grpo"}, "template", "is a train template; pick an eval template"),
    ({"path_param": "nope"}, "path_param", "has no parameter 'nope'"),
    ({"path_template": "{home}/x"}, "path_template", "{home} is not one of"),
    ({"path_template": "{step.__class__}"}, "path_template", "is not one of"),
    ({"path_template": "{step:>999999999}"}, "path_template", "take no format"),
    ({"trigger": "steps"}, "every_steps", "give N ≥ 1"),
    ({"max_at_once": 500}, "max_at_once", "between 1 and 50"),
    ({"params": {"eval_examples": 0}}, "eval_examples", "must be ≥ 1"),
])
def test_bad_rules_are_refused_with_the_field(team: Any, local_cluster: Any, kw: dict[str, Any], field: str,
                                              says: str) -> None:
    job = _training(team, local_cluster)
    args: dict[str, Any] = {"run": job.run, "template": builtin("demo-grpo-eval"), "cluster": local_cluster,
                            "path_param": "checkpoint"}
    args.update({k: builtin(v) if k == "template" else v for k, v in kw.items()})
    with pytest.raises(RuleInputError) as e:
        rule_create(**args)
    assert e.value.field == field and says in e.value.message
    assert not CheckpointRule.objects.exists()
