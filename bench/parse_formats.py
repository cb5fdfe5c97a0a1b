"""Parse throughput of deeprepo_client.formats.parse() on a ~100 MB verifiers results.jsonl.

Generates realistic rows (8 assistant turns with tool calls as JSON strings, tool outputs, a
reward with components, timing) in a temp dir, times parse() alone, and prints one JSON object
on the last line: {"parse_rollouts_per_s": N, ...}.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from deeprepo_client.formats import parse
from deeprepo_client.records import Problem, RolloutsEvent

TARGET_BYTES = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 100_000_000


def make_row(i: int, rng: random.Random) -> str:
    words = ["alpha", "beta", "gamma", "delta", "search", "result", "page", "section", "value", "answer"]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    completion = []
    for t in range(8):
        call = {"id": f"call_{i}_{t}", "type": "function",
                "function": {"name": rng.choice(["search_pages", "read_section", "python"]),
                             "arguments": json.dumps({"query": text(8), "page": t})}}
        completion.append({"role": "assistant", "content": text(40), "tool_calls": [json.dumps(call)]})
        completion.append({"role": "tool", "content": text(120), "tool_calls": None})
    completion.append({"role": "assistant", "content": "Final: " + text(20)})
    row = {"example_id": i // 4, "prompt": [{"role": "system", "content": text(30)}, {"role": "user", "content": text(60)}],
           "completion": completion, "task": "default", "answer": text(3), "info": {},
           "reward": rng.random(), "metrics": {"judge_reward_func": rng.random(), "num_turns": 9.0, "total_tool_calls": 8.0},
           "timing": {"generation_ms": 1200.0, "scoring_ms": 30.0, "total_ms": 1230.0, "start_time": 1.7e9},
           "token_usage": {"input_tokens": 3000.0, "output_tokens": 600.0},
           "is_completed": True, "is_truncated": False, "stop_condition": "no_tools", "error": None}
    return json.dumps(row)


def main() -> None:
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.jsonl"
        written = rows = 0
        with open(path, "w") as f:
            while written < TARGET_BYTES:
                line = make_row(rows, rng) + "\n"
                f.write(line)
                written += len(line)
                rows += 1
        (Path(tmp) / "metadata.json").write_text(json.dumps({"env_id": "bench", "model": "m", "num_examples": rows // 4}))
        t0 = time.perf_counter()
        count = problems = 0
        for ev in parse(tmp):
            if isinstance(ev, RolloutsEvent):
                count += len(ev.rollouts)
            elif isinstance(ev, Problem):
                problems += 1
        dt = time.perf_counter() - t0
    assert count == rows and problems == 0, (count, rows, problems)
    print(json.dumps({"parse_rollouts_per_s": round(count / dt), "rollouts": count, "mb": round(written / 1e6, 1),
                      "seconds": round(dt, 2), "mb_per_s": round(written / 1e6 / dt, 1)}))


if __name__ == "__main__":
    main()
