"""verl's real dumps and tracker file (written by verl 0.9.1's own writers) parse into what they hold."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from deeprepo_client.formats import detect

from .conftest import run_parse

VERL = "verl/generated-by-verl-0.9.1"


@pytest.fixture
def verl_dir(samples):
    return samples / VERL


def test_a_rollout_dump_is_verl_not_a_metrics_file(verl_dir):
    # Before: the dump matched prime-rl's metrics.jsonl ({step, ...}) and imported as one metric point.
    step1 = verl_dir / "rollout_data" / "1.jsonl"
    assert detect(step1).format == "verl"
    p = run_parse(step1)
    assert not p.problems
    assert len(p.rollouts) == 12 and not [pt for pt in p.points if "score" in pt["values"]]


def test_output_folder_train_run_eval_runs_and_tracker(verl_dir):
    assert detect(verl_dir).format == "verl"
    p = run_parse(verl_dir)
    assert not p.problems
    train = [r for r in p.runs if r.run["kind"] == "train"]
    evals = [r for r in p.runs if r.run["kind"] == "eval"]
    assert len(train) == 1 and train[0].run["name"] == "qwen2.5_0.5b_gsm8k_grpo"
    assert train[0].run["config"] == {"project": "verl_grpo_demo"}
    assert sorted(e.run["checkpoint_step"] for e in evals) == [0, 3]
    assert all(e.run["parent_ref"] == train[0].ref for e in evals)
    per_ref = Counter(e.ref for e in p.events if hasattr(e, "rollouts") for _ in e.rollouts)
    assert per_ref[train[0].ref] == 36 and sorted(per_ref[e.ref] for e in evals) == [3, 3]
    # the tracker's 5 lines (step 3 twice: training, then validation metrics)
    tracked = [pt for e in p.events if getattr(e, "ref", "") == train[0].ref for pt in getattr(e, "points", [])]
    assert [pt["step"] for pt in tracked] == [0, 1, 2, 3, 3]
    assert tracked[2]["values"]["critic/score/mean"] == 0.41666666  # orjson kept float32 digits
    # metrics were logged, so none are computed from the dumps for the train run
    assert not any("reward/mean" in pt["values"] for pt in tracked)


def test_groups_rebuilt_by_prompt_and_advantages(verl_dir):
    p = run_parse(verl_dir / "rollout_data")
    by_step = Counter((r["step"], r["example_key"]) for r in p.rollouts)
    assert len(by_step) == 9 and set(by_step.values()) == {4}  # 3 prompts x 4 samples, 3 steps
    natalia = [r for r in p.rollouts if r["step"] == 2 and "Natalia" in r["prompt"]]
    assert [r["reward"] for r in natalia] == [1.0, 0.0, 1.0, 1.0]
    assert [r["sample_index"] for r in natalia] == [0, 1, 2, 3]
    # mean 0.75, population std 0.433: +0.577 / -1.732
    assert [round(r["advantage"], 3) for r in natalia] == [0.577, -1.732, 0.577, 0.577]
    assert all(r["metrics"]["advantage_grpo"] == r["advantage"] for r in natalia)
    # the same prompt is the same example at every step
    assert len({r["example_key"] for r in p.rollouts if "Natalia" in r["prompt"]}) == 1


def test_rollout_fields(verl_dir):
    p = run_parse(verl_dir / "rollout_data" / "2.jsonl")
    r = p.rollouts[0]
    assert r["oracle"] == "72" and r["reward"] == 1.0 and r["step"] == 2
    assert r["reward_components"] == {"acc": 1.0}
    assert r["metrics"]["pred"] == "72" and len(r["metrics"]["request_id"]) == 36
    assert r["turns"] == [{"role": "assistant", "content": r["final_answer"]}]
    assert r["prompt"].startswith("system\nYou are Qwen")


def test_no_tracker_means_reward_curves_from_the_dumps(verl_dir):
    p = run_parse(verl_dir / "rollout_data")
    means = {pt["step"]: pt["values"]["reward/mean"] for pt in p.points}
    assert means == {1: 0.0, 2: 5 / 12, 3: 5 / 12}
    assert "groups/zero_std_frac" not in p.points[0]["values"]  # the run page's health chart has it
    assert p.points[1]["values"]["components/acc/mean"] == 5 / 12


def test_uid_groups_win_over_prompts(verl_dir, tmp_path):
    """Newer trainers dump `uid`: one prompt drawn twice in a batch stays two groups."""
    lines = (verl_dir / "rollout_data" / "2.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines[:4]]
    for i, row in enumerate(rows):
        row["uid"] = "a" if i < 2 else "b"
    (tmp_path / "5.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = run_parse(tmp_path)
    keys = [r["example_key"] for r in p.rollouts]
    assert keys[0] == keys[1] != keys[2] == keys[3]
    assert keys[0].endswith("#a")


def test_framework_advantage_kept_beside_ours(verl_dir, tmp_path):
    rows = [json.loads(x) for x in (verl_dir / "rollout_data" / "2.jsonl").read_text().splitlines()[:4]]
    for row in rows:
        row["advantage"] = 0.5
    (tmp_path / "7.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = run_parse(tmp_path / "7.jsonl").rollouts[1]
    # kept as the framework wrote it, ours beside it: the difference is visible
    assert r["advantage"] == 0.5 and r["metrics"]["advantage_framework"] == 0.5
    assert round(r["metrics"]["advantage_grpo"], 3) == -1.732 and "advantage" not in r["reward_components"]


def test_verl_validation_table_is_one_rollout_per_sample(tmp_path):
    """verl's ValidationGenerationsLogger table: a row a step, (input, output, score) per sample."""
    from deeprepo_client.formats.wandb_tables import rows_rollouts

    columns = ["step", "input_1", "output_1", "score_1", "input_2", "output_2", "score_2"]
    data = [[2, "2+0?", "2", 1.0, "2+1?", "4", 0.0], [4, "4+0?", "4", 1.0, "4+1?", "5", 1.0]]
    rollouts = rows_rollouts(columns, data, "t.table.json", "val/generations", 4, "run", tmp_path)
    assert [(r["step"], r["prompt"], r["final_answer"], r["reward"]) for r in rollouts] == [
        (2, "2+0?", "2", 1.0), (2, "2+1?", "4", 0.0), (4, "4+0?", "4", 1.0), (4, "4+1?", "5", 1.0)]
    assert len({r["uid"] for r in rollouts}) == 4
    from deeprepo_client.formats.wandb_tables import rollout_columns

    assert rollout_columns(columns) is not None  # the W&B server asks this before reading the rows
