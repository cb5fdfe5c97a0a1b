"""verl's tool agent loop dumps one multi-turn rollout as one decoded string: it is split back into
turns with their tool calls and outputs, the raw text kept, the split marked as inferred (issue 25, item 2)."""

from __future__ import annotations

import json

from .conftest import run_parse

# What verl writes for a Qwen2.5 tool agent loop: the response ids decoded with skip_special_tokens,
# so <|im_start|>/<|im_end|> are gone and the roles are bare words; <tool_call> is no special token.
AGENT_OUTPUT = (
    "I will compute it.\n<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"72\"}}\n</tool_call>\n"
    "user\n<tool_response>\nCurrent parsed answer='72' reward=1.0\n</tool_response>\n"
    "assistant\nLet me check once more.\n<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": \"{\\\"answer\\\": \\\"72\\\"}\"}\n</tool_call>\n"
    "user\n<tool_response>\nCurrent parsed answer='72' reward=1.0\n</tool_response>\n"
    "assistant\nThe answer is #### 72"
)


def _dump(tmp_path, output: str):
    d = tmp_path / "rollout_data"
    d.mkdir()
    row = {"input": "system\nYou are a math expert.\nuser\nNatalia sold clips...\nassistant\n",
           "output": output, "gts": "72", "score": 1.0, "step": 1}
    (d / "1.jsonl").write_text(json.dumps(row) + "\n")
    return d


def test_agent_loop_output_becomes_turns_with_tool_calls(tmp_path):
    p = run_parse(_dump(tmp_path, AGENT_OUTPUT))
    assert not p.problems
    [r] = p.rollouts
    assert [t["role"] for t in r["turns"]] == ["assistant", "assistant", "assistant"]
    first = r["turns"][0]
    assert first["content"] == "I will compute it."
    [call] = first["tool_calls"]
    assert call["name"] == "calc_gsm8k_reward" and call["arguments"] == {"answer": "72"}
    assert call["output"] == "Current parsed answer='72' reward=1.0"
    assert r["turns"][1]["tool_calls"][0]["arguments"] == {"answer": "72"}  # arguments as a JSON string, parsed
    assert r["final_answer"] == "The answer is #### 72"  # the last turn, not the whole text again
    assert r["metrics"]["raw_output"] == AGENT_OUTPUT and r["metrics"]["turns_inferred"] == "hermes"


def test_qwen3_coder_calls_and_a_loop_that_ends_on_a_call(tmp_path):
    out = ("<tool_call>\n<function=search>\n<parameter=query>\nclips in May\n</parameter>\n</function>\n</tool_call>\n"
           "user\n<tool_response>\n48\n</tool_response>\nassistant\n<tool_call>\n<function=search>\n"
           "<parameter=query>\nApril\n</parameter>\n</function>\n</tool_call>")
    [r] = run_parse(_dump(tmp_path, out)).rollouts
    calls = [c for t in r["turns"] for c in t.get("tool_calls", [])]
    assert [(c["name"], c["arguments"], c.get("output")) for c in calls] == [
        ("search", {"query": "clips in May"}, "48"), ("search", {"query": "April"}, None)]
    assert r["final_answer"] is None  # the loop stopped on a call: no answer was given


def test_a_one_turn_answer_is_left_as_written(tmp_path):
    out = "Natalia sold 48 clips.\nuser\nis not a role here\n#### 72"
    [r] = run_parse(_dump(tmp_path, out)).rollouts
    assert r["turns"] == [{"role": "assistant", "content": out}] and "turns_inferred" not in r["metrics"]
