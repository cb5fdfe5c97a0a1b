"""Hand-written fixtures per format, so the suite means something without the real samples."""

from __future__ import annotations

import json
from pathlib import Path

from deeprepo_client.formats import detect, patch_touches_tests

from .conftest import run_parse


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def vf_row(i: int, key: int, **extra) -> dict:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": f"x{i}"})}}
    flat = {"id": f"f{i}", "name": "lookup", "arguments": "not json {"}
    return {
        "example_id": key,
        "prompt": [{"role": "user", "content": f"question {key}"}],
        "completion": [
            {"role": "assistant", "content": "", "tool_calls": [json.dumps(call), json.dumps(flat)]},
            {"role": "tool", "content": "first result"},
            {"role": "tool", "content": "second result"},
            {"role": "assistant", "content": f"answer {i}"},
        ],
        "reward": 0.5, "metrics": {"acc_reward": 1.0, "num_turns": 2.0}, "fmt_reward": 0.0,
        "timing": {"start_time": 1.0, "generation": {"duration": 2.0}, "scoring": {"duration": 0.5}, "total": 2.6},
        "token_usage": {"input_tokens": 120.0, "output_tokens": 0.0},
        "is_truncated": False, "stop_condition": "no_tools", "error": None, "answer": "42",
        **extra,
    }


def test_verifiers_new_schema(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps({
        "env_id": "toy", "model": "m", "num_examples": 2, "rollouts_per_example": 2, "time": 12.5,
        "avg_reward": 0.5, "avg_metrics": {"acc_reward": 1.0}, "pass_at_k": {"1": 0.5},
        "cost": {"input_usd": 0.1, "output_usd": 0.2, "total_usd": 0.3}, "sampling_args": {"temperature": 0.7}}))
    _jsonl(tmp_path / "results.jsonl", [vf_row(0, 0), vf_row(1, 1), vf_row(2, 0),
                                        vf_row(3, 1, error={"type": "Timeout", "message": "slow"})])
    assert detect(tmp_path).format == "verifiers"
    p = run_parse(tmp_path)
    assert not p.problems
    assert p.run["summary"]["cost"]["total_usd"] == 0.3 and p.run["config"]["sampling_args"] == {"temperature": 0.7}
    assert [(r["example_key"], r["sample_index"]) for r in p.rollouts] == [("0", 0), ("1", 0), ("0", 1), ("1", 1)]
    r = p.rollouts[0]
    assert r["reward_components"] == {"acc_reward": 1.0, "fmt_reward": 0.0}
    assert r["num_turns"] == 2 and r["duration"] == 2.6
    assert r["input_tokens"] == 120 and r["output_tokens"] is None
    nested, flat = r["turns"][0]["tool_calls"]
    assert nested["name"] == "search" and nested["arguments"] == {"q": "x0"} and nested["output"] == "first result"
    assert flat["name"] == "lookup" and flat["arguments"] == "not json {" and flat["output"] == "second result"
    assert p.rollouts[3]["error"] == "Timeout: slow"


def test_verifiers_tool_call_id_pairing_and_ms_timing(tmp_path):
    row = {"id": 7, "prompt": "p", "reward": 1, "timing": {"generation_ms": 1000, "scoring_ms": 500, "total_ms": 1500},
           "completion": [
               {"role": "assistant", "tool_calls": [
                   {"id": "a", "function": {"name": "f", "arguments": "{}"}},
                   {"id": "b", "function": {"name": "g", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "b", "content": "out b"},
               {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "out a"}]}]}
    f = _jsonl(tmp_path / "results.jsonl", [row])
    r = run_parse(f).rollouts[0]
    a, b = r["turns"][0]["tool_calls"]
    assert (a["output"], b["output"]) == ("out a", "out b")
    assert r["duration"] == 1.5 and r["example_key"] == "7"


def test_prime_hosted_fixture(tmp_path):
    (tmp_path / "metadata.json").write_text(json.dumps({"run": {"id": "r1", "name": "run one", "base_model": "b",
                                                                "status": "RUNNING", "environments": [{"id": "e"}]}}))
    (tmp_path / "metrics_raw.json").write_text(json.dumps({"metrics": [
        {"step": s, "timestamp": "2026-01-01T00:00:00+00:00", "reward/all/mean": s / 10, "x/y": None} for s in range(3)]}))
    row = {"run_id": "r1", "step": 2, "problem_id": 9, "sample_id": 0, "prompt": json.dumps([{"role": "user", "content": "q"}]),
           "completion": json.dumps([{"role": "assistant", "content": "a"}]), "metrics": json.dumps({"acc": 1.0}),
           "timing": "", "info": "", "reward": 1.0, "advantage": 0.5, "num_input_tokens": 10, "num_output_tokens": 0}
    _jsonl(tmp_path / "results.jsonl", [row])
    (tmp_path / "rollouts_raw.json").write_text(json.dumps({"samples": [row, dict(row, sample_id=1)], "total_pages": 1}))
    p = run_parse(tmp_path)
    assert not p.problems and p.run["status"] == "running"
    assert [pt["values"]["reward/all/mean"] for pt in p.points] == [0.0, 0.1, 0.2]
    assert len(p.rollouts) == 2  # the duplicate of results.jsonl is skipped
    r = p.rollouts[0]
    assert r["input_tokens"] == 10 and r["output_tokens"] is None and r["final_answer"] == "a"
    assert r["reward_components"] == {"acc": 1.0} and r["example_key"] == "9" and r["step"] == 2


def test_trl_state_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "grpo-out"
    ck = out / "checkpoint-20"
    ck.mkdir(parents=True)
    (out / "checkpoint-10").mkdir()
    (out / "checkpoint-10" / "trainer_state.json").write_text(json.dumps({"log_history": [], "global_step": 10}))
    hist = [{"step": 10, "loss": 0.5, "reward": 0.2, "rewards/acc/mean": 0.2, "epoch": 0.5},
            {"step": 10, "eval_loss": 0.7, "eval_reward": 0.1},
            {"step": 20, "loss": 0.4, "reward": 0.3},
            {"step": 20, "train_runtime": 100.0, "train_loss": 0.45, "total_flos": 1.0}]
    (ck / "trainer_state.json").write_text(json.dumps({"log_history": hist, "global_step": 20, "max_steps": 20}))
    (out / "completions").mkdir()
    table = pa.table({"step": [10, 10, 10], "prompt": ["p1", "p1", "p2"], "completion": ["c1", "c2", "c3"],
                      "acc": [1.0, 0.0, 1.0], "fmt": [0.5, 0.5, None], "advantage": [0.5, -0.5, 0.0]})
    pq.write_table(table, out / "completions" / "completions_00010.parquet")
    assert detect(out).format == "trl"
    assert detect(ck / "trainer_state.json").format == "trl"
    p = run_parse(out)
    assert not p.problems
    assert p.run["summary"]["train_runtime"] == 100.0 and p.run["summary"]["global_step"] == 20
    assert [pt["step"] for pt in p.points] == [10, 10, 20]  # the summary row is not a step
    assert p.points[1]["values"] == {"eval_loss": 0.7, "eval_reward": 0.1}
    assert len(p.rollouts) == 3
    a, b, c = p.rollouts
    assert a["example_key"] == b["example_key"] != c["example_key"] and len(a["example_key"]) == 16
    assert (a["sample_index"], b["sample_index"]) == (0, 1)
    assert a["reward_components"] == {"acc": 1.0, "fmt": 0.5} and a["reward"] == 1.5 and a["advantage"] == 0.5
    assert c["reward_components"] == {"acc": 1.0}
    assert a["turns"] == [{"role": "assistant", "content": "c1"}]


def _inspect_sample(sid, epoch, value):
    return {"id": sid, "epoch": epoch, "input": "attachment://h1", "target": "T",
            "messages": [{"role": "user", "content": "attachment://h1"},
                         {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "hmm"},
                                                           {"type": "text", "text": "calling"}],
                          "tool_calls": [{"id": "t1", "function": "bash", "arguments": {"cmd": "ls"}}]},
                         {"role": "tool", "tool_call_id": "t1", "function": "bash", "content": "a.txt"},
                         {"role": "assistant", "content": "done"}],
            "output": {"choices": [{"stop_reason": "stop"}], "completion": "done"},
            "scores": {"s1": {"value": value}, "s2": {"value": {"x": 1, "y": "P"}}},
            "model_usage": {"m": {"input_tokens": 5, "output_tokens": 3}}, "total_time": 2.0,
            "attachments": {"h1": "the long prompt"}}


def test_inspect_json_log(tmp_path):
    log = {"version": 2, "status": "success", "eval": {"task": "t", "model": "m", "run_id": "r",
                                                        "scorers": [{"name": "s1"}]},
           "results": {"scores": []}, "samples": [_inspect_sample(1, 1, "C"), _inspect_sample(1, 2, "P"),
                                                  _inspect_sample("b", 1, "N")]}
    f = tmp_path / "log.json"
    f.write_text(json.dumps(log))
    assert detect(f).format == "inspect_json"
    p = run_parse(f)
    assert not p.problems
    assert [(r["example_key"], r["sample_index"], r["reward"]) for r in p.rollouts] == [("1", 1, 1.0), ("1", 2, 0.5), ("b", 1, 0.0)]
    r = p.rollouts[0]
    assert r["reward_components"] == {"s1": 1.0, "s2/x": 1.0, "s2/y": 0.5}
    assert r["prompt"] == "the long prompt" and r["turns"][0]["content"] == "the long prompt"
    t = r["turns"][1]
    assert t["reasoning"] == "hmm" and t["content"] == "calling"
    assert t["tool_calls"][0] == {"call_id": "t1", "name": "bash", "arguments": {"cmd": "ls"}, "output": "a.txt"}
    assert r["input_tokens"] == 5 and r["output_tokens"] == 3


def test_swe_agent_traj_cumulative_stats(tmp_path):
    traj = {"trajectory": [
        {"action": "ls\n", "observation": "a", "thought": "look", "execution_time": 1.0,
         "extra_info": {"model_stats": {"tokens_sent": 100, "tokens_received": 10}}},
        {"action": "submit", "observation": "diff", "thought": "done", "execution_time": 0.5,
         "extra_info": {"model_stats": {"tokens_sent": 250, "tokens_received": 30}}}],
        "history": [{"role": "system", "content": "sys"}, {"role": "user", "content": "demo", "is_demo": True},
                    {"role": "user", "content": "task"}, {"role": "assistant", "content": "look"}],
        "info": {"exit_status": "submitted", "submission": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
                 "model_stats": {"instance_cost": 0.2, "tokens_sent": 250, "tokens_received": 30, "api_calls": 2}}}
    f = tmp_path / "inst-1.traj"
    f.write_text(json.dumps(traj))
    p = run_parse(f)
    r = p.rollouts[0]
    assert [(t["input_tokens"], t["output_tokens"]) for t in r["turns"]] == [(100, 10), (150, 20)]
    assert r["prompt"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    assert r["metrics"]["touches_tests"] is True and r["duration"] == 1.5 and r["example_key"] == "inst-1"


def test_openhands_fixture(tmp_path):
    def agent(i, cum_in, **kw):
        return {"id": i, "source": "agent", "action": "run", "args": {"command": "ls", "thought": f"t{i}"},
                "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": f"c{i}"},
                "llm_metrics": {"accumulated_cost": 0.01 * i, "accumulated_token_usage": {"prompt_tokens": cum_in,
                                                                                          "completion_tokens": 5 * i}}, **kw}
    hist = [{"id": 0, "source": "user", "action": "message", "args": {"content": "fix it"}},
            agent(1, 100), {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "out1",
                            "extras": {"metadata": {"exit_code": 2}}},
            agent(3, 250), {"id": 4, "source": "agent", "observation": "run", "cause": 3, "content": "out3"}]
    row = {"instance_id": "x__y-1", "instruction": "fix it", "history": hist, "metadata": {"agent_class": "A",
           "llm_config": {"model": "m", "api_key": "sk-secret"}}, "metrics": {"accumulated_cost": 0.03, "costs": [1],
           "accumulated_token_usage": {"prompt_tokens": 250, "completion_tokens": 15}},
           "test_result": {"git_patch": "diff --git a/src/a.py b/src/a.py\n"}, "error": None,
           "instance": {"patch": "gold"}}
    f = _jsonl(tmp_path / "output.jsonl", [row])
    p = run_parse(f)
    assert "sk-secret" not in json.dumps(p.run)
    r = p.rollouts[0]
    calls = [t for t in r["turns"] if t.get("tool_calls")]
    assert [c["tool_calls"][0]["output"] for c in calls] == ["out1", "out3"]
    assert calls[0]["tool_calls"][0]["is_error"] is True
    assert [(c["input_tokens"], c["output_tokens"]) for c in calls] == [(100, 5), (150, 10)]
    assert r["cost"] == 0.03 and r["oracle"] == "gold" and r["metrics"]["touches_tests"] is False


def test_swebench_reports_tree(tmp_path):
    base = tmp_path / "logs" / "run_evaluation" / "run7" / "modelA"
    for iid, resolved, f2p in (("a__b-1", True, (["t1", "t2"], [])), ("a__b-2", False, (["t1"], ["t2", "t3"]))):
        d = base / iid
        d.mkdir(parents=True)
        (d / "report.json").write_text(json.dumps({iid: {"patch_is_None": False, "patch_exists": True,
            "patch_successfully_applied": True, "resolved": resolved, "tests_status": {
                "FAIL_TO_PASS": {"success": f2p[0], "failure": f2p[1]}, "PASS_TO_PASS": {"success": ["p"], "failure": []}}}}))
        (d / "patch.diff").write_text("diff --git a/tests/test_a.py b/tests/test_a.py\n" if not resolved else
                                      "diff --git a/src/a.py b/src/a.py\n")
    d = detect(tmp_path)
    assert d.format == "swebench_reports"
    p = run_parse(tmp_path)
    assert not p.problems
    assert p.run["name"] == "modelA.run7"
    assert p.rewards["a__b-1"]["reward"] == 1.0 and p.rewards["a__b-1"]["reward_components"] == {"FAIL_TO_PASS": 1.0, "PASS_TO_PASS": 1.0}
    two = p.rewards["a__b-2"]
    assert two["reward"] == 0.0 and abs(two["reward_components"]["FAIL_TO_PASS"] - 1 / 3) < 1e-9
    assert two["metrics"]["touches_tests"] is True and p.rewards["a__b-1"]["metrics"]["touches_tests"] is False
    assert {r["example_key"] for r in p.rollouts} == {"a__b-1", "a__b-2"}


def test_patch_touches_tests():
    assert patch_touches_tests("diff --git a/pkg/tests/test_x.py b/pkg/tests/test_x.py\n--- a/x\n+++ b/x\n")
    assert patch_touches_tests("diff --git a/src/foo_test.go b/src/foo_test.go\n")
    assert patch_touches_tests("diff --git a/web/a.spec.ts b/web/a.spec.ts\n")
    assert patch_touches_tests("diff --git a/conftest.py b/conftest.py\n")
    assert not patch_touches_tests("diff --git a/src/latest.py b/src/latest.py\n")
    assert not patch_touches_tests("")


def test_prime_rl_output_dir(tmp_path):
    _jsonl(tmp_path / "metrics.jsonl", [{"step": s, "time": 1000.0 + s, "loss/mean": 1.0 / (s + 1), "optim/lr": 1e-6}
                                        for s in range(4)])
    ep = {"nodes": [{"id": "n0", "parent_id": None, "message": {"role": "system", "content": "sys"}},
                    {"id": "n1", "parent_id": "n0", "message": {"role": "user", "content": "q"}},
                    {"id": "n2", "parent_id": "n1", "message": {"role": "assistant", "content": "wrong branch"}},
                    {"id": "n3", "parent_id": "n1", "message": {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "t", "type": "function", "function": {"name": "calc", "arguments": "{\"e\": \"1+1\"}"}}]}},
                    {"id": "n4", "parent_id": "n3", "message": {"role": "tool", "tool_call_id": "t", "content": "2"}},
                    {"id": "n5", "parent_id": "n4", "message": {"role": "assistant", "content": "2"}}],
          "calls": [{"model": "m", "usage": {"input_tokens": 10, "output_tokens": 4}, "cost": 0.001},
                    {"model": "m", "usage": {"input_tokens": 20, "output_tokens": 1}, "cost": 0.002}],
          "rewards": {"correct": {"score": 1.0, "weight": 1.0}, "fmt": {"score": 0.5, "weight": 0.2}},
          "group": {"id": "ex-3"}, "run": {"type": "train", "step": 2}}
    tdir = tmp_path / "rollouts" / "step_2" / "train" / "env"
    tdir.mkdir(parents=True)
    _jsonl(tdir / "traces.jsonl", [ep, ep])
    edir = tmp_path / "rollouts" / "step_2" / "eval" / "env"
    edir.mkdir(parents=True)
    _jsonl(edir / "traces.jsonl", [dict(ep, run={"type": "eval", "step": 2})])
    assert detect(tmp_path).format == "prime_rl"
    p = run_parse(tmp_path)
    assert not p.problems
    assert [e.run["kind"] for e in p.runs] == ["train", "eval"] and p.runs[1].run["parent_ref"] == "train"
    assert [pt["values"]["loss/mean"] for pt in p.points] == [1.0, 0.5, 1 / 3, 0.25]
    train = [r for e in p.events if getattr(e, "ref", None) == "train" and hasattr(e, "rollouts") for r in e.rollouts]
    assert len(train) == 2 and len(p.rollouts) == 3
    r = train[0]
    assert r["example_key"] == "ex-3" and r["step"] == 2 and abs(r["reward"] - 1.1) < 1e-9
    assert r["reward_components"] == {"correct": 1.0, "fmt": 0.5}
    assert [m["content"] for m in r["prompt"]] == ["sys", "q"]
    assert r["turns"][0]["tool_calls"][0]["arguments"] == {"e": "1+1"} and r["turns"][0]["tool_calls"][0]["output"] == "2"
    assert r["final_answer"] == "2" and r["input_tokens"] == 30 and abs(r["cost"] - 0.003) < 1e-12
    assert r["turns"][0]["input_tokens"] == 10 and r["turns"][1]["input_tokens"] == 20
