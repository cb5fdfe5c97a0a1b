"""Realistic record builders for tests and benchmarks."""

from __future__ import annotations

from typing import Any


def rollout(example: str = "ex-0", *, reward: float = 0.5, step: int | None = 0, turns: int = 3,
            uid: str | None = None, sample_index: int = 0, **extra: Any) -> dict[str, Any]:
    body: list[dict[str, Any]] = [{"role": "user", "content": f"Audit the repository of {example}."}]
    for i in range(turns):
        body.append({
            "role": "assistant",
            "content": f"Turn {i}: I will look at the files.",
            "reasoning": "thinking about which file to open",
            "input_tokens": 100 + i,
            "output_tokens": 20 + i,
            "latency": 0.5,
            "tool_calls": [
                {"call_id": f"c{i}", "name": "read_file", "arguments": {"path": f"src/f{i}.py"},
                 "output": f"def f{i}(): pass"},
                {"call_id": f"b{i}", "name": "llm_batch", "arguments": {"files": ["a.py", "b.py"]},
                 "output": "2 findings",
                 "sub_calls": [
                     {"name": "llm_query", "arguments": {"prompt": "audit a.py"}, "output": "SQL injection",
                      "model": "sub-model", "input_tokens": 50, "output_tokens": 10},
                     {"name": "llm_query", "arguments": {"prompt": "audit b.py"}, "output": "MD5 hashing",
                      "model": "sub-model", "input_tokens": 55, "output_tokens": 12},
                 ]},
            ],
        })
    record: dict[str, Any] = {
        "example_key": example,
        "step": step,
        "sample_index": sample_index,
        "reward": reward,
        "reward_components": {"f1": reward},
        "input_tokens": 1000,
        "output_tokens": 200,
        "stop_condition": "answered",
        "final_answer": "SQL injection in db.py",
        "turns": body,
    }
    if uid is not None:
        record["uid"] = uid
    record.update(extra)
    return record
