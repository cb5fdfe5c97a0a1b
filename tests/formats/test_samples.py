"""Every real sample file parses into the content it really holds."""

from __future__ import annotations

from collections import Counter

from deeprepo_client.formats import detect

from .conftest import run_parse

VF = "verifiers_eval"


def test_verifiers_oldest_schema_math_python(samples):
    folder = samples / VF / "math-python--gpt-4.1-mini__578769a7"
    assert detect(folder).format == "verifiers"
    p = run_parse(folder)
    assert not p.problems
    run = p.run
    assert run["kind"] == "eval" and run["source"] == "verifiers"
    assert run["model"] == "gpt-4.1-mini" and run["environment"] == "math-python"
    assert abs(run["summary"]["time_s"] - 34.94043) < 1e-3
    assert run["summary"]["avg_metrics"]["correct_answer_reward_func"] == 0.9333333333333333
    assert len(p.rollouts) == 15
    assert Counter(r["example_key"] for r in p.rollouts) == {str(i): 3 for i in range(5)}  # grouped by old `id`
    r = p.by_key("0")[0]
    assert r["reward"] == 1.0 and r["reward_components"] == {"correct_answer_reward_func": 1.0}
    assert r["metrics"]["python_calls"] == 2.0  # a monitor, not a reward component
    call = r["turns"][0]["tool_calls"][0]
    assert call["name"] == "python" and call["call_id"] == "call_RYna5gb2agTQButNTFngPJmD"
    assert call["arguments"]["code"].startswith("from sympy import symbols")
    # tool message without tool_call_id paired by order; output inside the call, no separate tool turn
    assert "No module named 'sympy'" in call["output"]
    assert r["turns"][1]["tool_calls"][0]["output"] == "Out[2]: 0"
    assert all(t["role"] != "tool" for t in r["turns"])
    assert r["final_answer"] == "\\[\n\\boxed{0}\n\\]"
    assert abs(r["duration"] - 14.3125741) < 1e-6
    assert r["oracle"] == "0"


def test_verifiers_wordle_nonadjacent_groups(samples):
    p = run_parse(samples / VF / "wordle--qwen3-30b-a3b-thinking-2507__50bdff53")
    assert not p.problems and len(p.rollouts) == 15
    assert sorted(r["sample_index"] for r in p.by_key("0")) == [0, 1, 2]
    first = p.by_key("0")[0]
    assert first["reward"] == 0.7
    assert first["reward_components"]["partial_credit_reward_func"] == 0.5
    assert first["reward_components"]["format_reward_func"] == 1.0
    assert first["turns"][0] == {"role": "assistant", "content": "\n\n<guess>[CRANE]</guess>"}
    assert first["turns"][1]["role"] == "user" and "You have 5 guesses left." in first["turns"][1]["content"]
    assert p.run["model"] == "qwen/qwen3-30b-a3b-thinking-2507"


def test_verifiers_wiki_search_tool_calls(samples):
    p = run_parse(samples / VF / "wiki-search--gpt-5-mini__dc83cc41")
    assert not p.problems and len(p.rollouts) == 100
    assert len({r["example_key"] for r in p.rollouts}) == 100
    r = p.by_key("0")[0]
    assert r["reward"] == 1.0 and r["reward_components"] == {"judge_reward_func": 1.0}
    call = r["turns"][0]["tool_calls"][0]
    assert call["name"] == "search_pages" and call["arguments"] == {"query": "Utsuro-bune meaning Japanese"}
    assert call["output"].startswith("[{'page_id': 'utsuro-bune'")
    assert r["metrics"]["total_tool_calls"] == 3.0
    assert sum(len(t.get("tool_calls", [])) for t in r["turns"]) == 3
    assert r["example_info"]["info"]["oai_tools"][0]["function"]["name"] == "search_pages"
    assert p.run["summary"]["avg_reward"] == 0.92


def test_prime_hosted_export(samples):
    folder = samples / "prime_hosted_rl" / "bp6qd19u06wzeqkdrf0h24xx"
    assert detect(folder).format == "prime_hosted"
    p = run_parse(folder)
    assert not p.problems
    run = p.run
    assert run["kind"] == "train" and run["source"] == "prime" and run["status"] == "finished"
    assert run["external_id"] == "bp6qd19u06wzeqkdrf0h24xx" and run["model"] == "Qwen/Qwen3.5-2B"
    assert run["environment"] == "intertwine/sv-env-network-logs"
    assert run["summary"]["usage"]["total_cost_usd"] == 0.0935
    assert len(p.points) == 51 and sorted(pt["step"] for pt in p.points) == list(range(51))
    keys = {k for pt in p.points for k in pt["values"]}
    assert len(keys) == 165 and "eval/intertwine/sv-env-network-logs/avg@1" in keys
    step10 = next(pt for pt in p.points if pt["step"] == 10)
    assert step10["values"]["reward/all/mean"] == 0.61625
    # results.jsonl and rollouts_raw.json hold the same 25 rollouts: imported once
    assert len(p.rollouts) == 25 and len({r["uid"] for r in p.rollouts}) == 25
    assert Counter(r["example_key"] for r in p.rollouts) == {"4": 16, "6": 8, "0": 1}
    r = next(r for r in p.by_key("4") if r["sample_index"] == 0)
    assert r["step"] == 40 and r["reward"] == 1.78
    assert r["reward_components"]["reward_calibration"] == 0.9
    assert r["input_tokens"] is None and r["output_tokens"] is None  # 0 means unknown
    assert r["turns"][0]["reasoning"].startswith("```json")
    assert isinstance(r["prompt"], list) and r["prompt"][0]["role"] == "system"
    assert abs(r["duration"] - 0.2507677) < 1e-6


def test_inspect_popularity_eval(samples):
    f = samples / "inspect_ai" / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
    assert detect(f).format == "inspect_eval"
    p = run_parse(f)
    assert not p.problems and len(p.rollouts) == 10
    assert p.run["name"] == "popularity" and p.run["model"] == "openai/gpt-4o-mini"
    assert p.run["summary"]["match/accuracy"] == 0.8
    r = p.by_key("1")[0]
    assert r["sample_index"] == 1 and r["reward"] == 1.0 and r["reward_components"] == {"match": 1.0}  # "C"
    assert r["input_tokens"] == 64 and r["output_tokens"] == 2
    assert r["turns"][-1] == {"role": "assistant", "content": "Yes"}
    assert sum(r["reward"] for r in p.rollouts) == 8.0


def test_inspect_mmlu_choice_eval(samples):
    p = run_parse(samples / "inspect_ai" / "mmlu-summary-choices.eval")
    assert not p.problems and len(p.rollouts) == 1
    r = p.rollouts[0]
    assert r["reward"] == 0.0 and r["reward_components"] == {"choice": 0.0}  # "I"
    assert r["oracle"] == "A" and r["final_answer"] == "ANSWER: C"
    assert r["example_info"]["choices"][2] == "12.2 eV"
    assert r["duration"] == 1.566 and r["input_tokens"] == 153


def test_swe_agent_traj(samples):
    f = samples / "swe_agent" / "pydicom__pydicom-1458.traj"
    assert detect(f).format == "swe_agent_traj"
    p = run_parse(f)
    assert not p.problems and len(p.rollouts) == 1
    r = p.rollouts[0]
    assert r["example_key"] == "pydicom__pydicom-1458"
    assert len(r["turns"]) == 12
    call = r["turns"][0]["tool_calls"][0]
    assert call["name"] == "create" and call["arguments"] == {"command": "create reproduce_bug.py\n"}
    assert call["output"].startswith("[File: /pydicom__pydicom/reproduce_bug.py (1 lines total)]")
    assert r["turns"][0]["content"].startswith("First, I'll create a new Python script")
    assert r["turns"][-1]["tool_calls"][0]["name"] == "submit"
    assert r["final_answer"].lstrip().startswith("diff --git a/pydicom/pixel_data_handlers/numpy_handler.py")
    assert r["cost"] == 1.26719 and r["input_tokens"] == 122612 and r["output_tokens"] == 1369
    assert r["stop_condition"] == "submitted" and r["metrics"]["touches_tests"] is False
    # only the system message and the instance prompt, not the demo nor the per-step prompts
    assert [m["role"] for m in r["prompt"]] == ["system", "user"]
    assert "Pixel Representation attribute should be optional" in r["prompt"][1]["content"]


def test_swe_agent_preds(samples):
    f = samples / "swe_agent" / "all_preds.jsonl"
    assert detect(f).format == "swe_agent_preds"
    p = run_parse(f)
    assert not p.problems and len(p.rollouts) == 1
    r = p.rollouts[0]
    assert r["example_key"] == "pydicom__pydicom-1458"
    assert "required_elements.append('PixelRepresentation')" in r["final_answer"]
    assert p.run["name"].startswith("gpt4__swe-bench-dev-easy_first_only")


def test_openhands_output(samples):
    f = samples / "openhands" / "multi_swe_bench_output.jsonl"
    assert detect(f).format == "openhands"
    p = run_parse(f)
    assert not p.problems and len(p.rollouts) == 3
    assert p.run["model"] == "openai/openrouter-llama-4-maverick" and p.run["adapter"] == "CodeActAgent"
    assert p.run["config"]["llm_config"]["api_key"] == "***"
    r = p.by_key("ponylang__ponyc-4595")[0]
    assert r["input_tokens"] == 565158 and r["output_tokens"] == 2558
    assert r["final_answer"].startswith("diff --git a/src/libponyc/ast/parser.c")
    first_call_turn = next(t for t in r["turns"] if t.get("tool_calls"))
    call = first_call_turn["tool_calls"][0]
    assert call["name"] == "execute_bash" and call["call_id"] == "toolu_01"
    assert call["arguments"]["command"] == "ls -l /workspace/ponylang__ponyc__0.1"
    assert call["output"].startswith("total 300")
    # cumulative llm_metrics -> per turn: first call 5920 prompt tokens, the second 12656 - 5920
    assert first_call_turn["input_tokens"] == 5920 and first_call_turn["output_tokens"] == 128
    second = [t for t in r["turns"] if t.get("tool_calls")][1]
    assert second["input_tokens"] == 12656 - 5920
    last = p.rollouts[2]
    assert "maximum iteration" in last["error"] and last["is_truncated"] is True


def test_swebench_summary(samples):
    f = samples / "swebench" / "gold.fresh-verified.json"
    assert detect(f).format == "swebench_summary"
    p = run_parse(f)
    assert not p.problems
    assert len(p.rewards) == 500 and len(p.rollouts) == 500
    assert p.rewards["astropy__astropy-12907"]["reward"] == 1.0
    assert all(v["reward"] == 1.0 for v in p.rewards.values())
    assert p.run["model"] == "gold" and p.run["summary"]["resolved_instances"] == 500


def test_samples_folder_as_a_whole(samples):
    d = detect(samples)
    assert d.format == "multi"
    p = run_parse(samples)
    # MLflow's raw tracking store (SQLite + mlruns/) is no format we read: named, never silently skipped
    store = samples / "mlflow" / "store"
    assert {pr.file for pr in p.problems} == {str(store / "mlflow.db"), *(str(f) for f in store.rglob("*.json"))}
    assert all(pr.message.startswith("not read") for pr in p.problems)
    refs = [e.ref for e in p.runs]
    assert len(refs) == len(set(refs)) >= 8
