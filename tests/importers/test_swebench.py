"""SWE-bench results land on the rollouts that produced them; without a match they make an eval run."""

from __future__ import annotations

import json

from deeprepo_web.runs.models import Rollout, Run

PATCH_SRC = "diff --git a/src/mod.py b/src/mod.py\n--- a/src/mod.py\n+++ b/src/mod.py\n@@ -1 +1 @@\n-a\n+b\n"
PATCH_TEST = "diff --git a/tests/test_mod.py b/tests/test_mod.py\n--- a/tests/test_mod.py\n+++ b/tests/test_mod.py\n@@ -1 +1 @@\n-assert x\n+pass\n"


def _preds(path, preds, model="agent"):
    path.write_text("\n".join(json.dumps({"instance_id": i, "model_patch": p, "model_name_or_path": model})
                              for i, p in preds.items()) + "\n")
    return path


def _reports(root, run_id, model, results):
    for iid, (resolved, f2p, p2p, patch) in results.items():
        d = root / "logs" / "run_evaluation" / run_id / model / iid
        d.mkdir(parents=True)
        (d / "report.json").write_text(json.dumps({iid: {
            "patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True, "resolved": resolved,
            "tests_status": {"FAIL_TO_PASS": {"success": ["t1"] * f2p[0], "failure": ["t2"] * f2p[1]},
                             "PASS_TO_PASS": {"success": ["t3"] * p2p[0], "failure": ["t4"] * p2p[1]},
                             "FAIL_TO_FAIL": {"success": [], "failure": []}, "PASS_TO_FAIL": {"success": [], "failure": []}},
        }}))
        (d / "patch.diff").write_text(patch)
    return root / "logs"


def test_reports_attach_rewards_to_matching_rollouts(tmp_path, do_import):
    preds = _preds(tmp_path / "all_preds.jsonl", {"a__a-1": PATCH_SRC, "b__b-2": PATCH_TEST})
    agent = do_import(preds)
    agent_run = Run.objects.get(public_id=agent.runs[0].public_id)
    assert Rollout.objects.filter(run=agent_run, reward__isnull=True).count() == 2

    logs = _reports(tmp_path / "eval", "run1", "agent", {
        "a__a-1": (True, (2, 0), (3, 1), PATCH_SRC),
        "b__b-2": (False, (1, 3), (4, 0), PATCH_TEST),
        "c__c-3": (True, (1, 0), (1, 0), PATCH_SRC),  # nothing produced this one here: a new eval run
    })
    report = do_import(logs)
    assert not report.problems
    by_id = {r.public_id: r for r in report.runs}
    assert by_id[agent_run.public_id].rewards_attached == 2
    a = Rollout.objects.get(run=agent_run, example__key="a__a-1")
    assert a.reward == 1.0 and a.reward_components == {"FAIL_TO_PASS": 1.0, "PASS_TO_PASS": 0.75}
    assert a.metrics["touches_tests"] is False
    b = Rollout.objects.get(run=agent_run, example__key="b__b-2")
    assert b.reward == 0.0 and b.reward_components == {"FAIL_TO_PASS": 0.25, "PASS_TO_PASS": 1.0}
    assert b.metrics["touches_tests"] is True  # a patch that edits tests is flagged
    evals = Run.objects.filter(source="swebench")
    assert evals.count() == 1
    assert list(Rollout.objects.filter(run=evals[0]).values_list("example__key", flat=True)) == ["c__c-3"]
    # again: the same rewards, nothing new
    again = do_import(logs)
    assert Rollout.objects.count() == 3 and Run.objects.count() == 2
    assert all(r.rollouts == 0 for r in again.runs)


def test_summary_flags_existing_patch_that_touches_tests(tmp_path, do_import):
    do_import(_preds(tmp_path / "all_preds.jsonl", {"x__x-1": PATCH_TEST, "y__y-2": PATCH_SRC}))
    summary = tmp_path / "agent.run7.json"
    summary.write_text(json.dumps({"total_instances": 2, "resolved_instances": 1, "resolved_ids": ["x__x-1"],
                                   "unresolved_ids": ["y__y-2"], "error_ids": [], "schema_version": 2}))
    report = do_import(summary)
    assert not report.problems
    assert Run.objects.filter(source="swebench").count() == 0  # every instance matched
    x = Rollout.objects.get(example__key="x__x-1")
    assert x.reward == 1.0 and x.metrics["status"] == "resolved" and x.metrics["touches_tests"] is True
    assert Rollout.objects.get(example__key="y__y-2").reward == 0.0
    assert sum(r.rewards_attached for r in report.runs) == 2


def test_the_most_recent_run_with_the_example_gets_the_reward(tmp_path, do_import):
    old = do_import(_preds(tmp_path / "old_preds.jsonl", {"x__x-1": PATCH_SRC}, model="agent-v1"))
    new = do_import(_preds(tmp_path / "new_preds.jsonl", {"x__x-1": PATCH_SRC}, model="agent-v2"))
    assert old.runs[0].public_id != new.runs[0].public_id
    summary = tmp_path / "agent.run8.json"
    summary.write_text(json.dumps({"resolved_ids": ["x__x-1"], "unresolved_ids": [], "schema_version": 2}))
    do_import(summary)
    assert Rollout.objects.get(run__public_id=new.runs[0].public_id).reward == 1.0
    assert Rollout.objects.get(run__public_id=old.runs[0].public_id).reward is None
