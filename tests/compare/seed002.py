"""The three eval runs of seed 002 (3 examples x 2 rollouts each), ingested through the services,
plus the GRPO training run they came from with its reward progression and checkpoint evals."""

from __future__ import annotations

from typing import Any

from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.services import run_create

EXAMPLES = ["mini-repo-flask-auth", "mini-repo-billing", "mini-repo-etl"]
ENV = "deeprepo-orchestration"
M8 = "Qwen/Qwen3-8B"
M30 = "Qwen/Qwen3-30B-A3B-Instruct-2507"
M30T = "Qwen/Qwen3-30B-A3B-Instruct-2507:t2nj7mvwh0qs5h1szlfekqoh"

# Rollouts in report order: r1 for the three examples, then r2. The 8B rewards are not in the
# report; these reproduce its summary (0.551, σ 0.176, 0.200 — 0.729) and its three deltas.
RUNS: dict[str, dict[str, Any]] = {
    "Qwen3-8B (untrained)": {
        "model": M8,
        "rewards": [0.200, 0.729, 0.710, 0.620, 0.530, 0.5179],
        "turns": [2, 5, 4, 3, 4, 4],
        "input": [4200, 7900, 6900, 5600, 6800, 6700],
        "output": [900, 1700, 1500, 1200, 1400, 1450],
        "delegates": [False, True, True, True, True, True],
    },
    "Qwen3-30B-A3B (untrained)": {
        "model": M30,
        "rewards": [0.636, 0.9, 0.85, 0.887, 0.7, 0.738],
        "turns": [18, 5, 5, 7, 9, 8],
        "input": [30000, 9000, 9500, 13000, 14000, 12091],
        "output": [3000, 1800, 1900, 2100, 2300, 2102],
        "delegates": [True] * 6,
    },
    "Qwen3-30B-A3B (GRPO trained)": {
        "model": M30T,
        "rewards": [0.962, 1.0, 1.0, 0.962, 1.0, 1.0],
        "turns": [6, 6, 6, 6, 6, 6],
        "input": [8500, 8600, 8580, 8590, 8620, 8621],
        "output": [2380, 2384, 2382, 2383, 2381, 2384],
        "delegates": [True] * 6,
    },
}

PROGRESSION = [(0, 0.8439, 7.57), (10, 0.8521, 6.57), (20, 0.8777, 6.68), (30, 0.8904, 6.99), (40, 0.8981, 6.76),
               (50, 0.9259, 6.26), (60, 0.9416, 6.27), (70, 0.9236, 6.84), (80, 0.9418, 6.33), (90, 0.8518, 5.11),
               (99, 0.9688, 6.01)]


def trajectory(n_turns: int, delegates: bool, sub_model: str) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"role": "user", "content": "Audit this codebase for security bugs."}]
    for i in range(n_turns):
        calls: list[dict[str, Any]] = []
        if i == 0:
            calls.append({"name": "python", "arguments": {"code": "print(file_tree)"}, "output": "app/ db/ auth/"})
        elif delegates and i in (1, n_turns - 2):
            calls.append({
                "name": "llm_batch", "arguments": {"prompts": ["audit db.py", "audit auth.py"]}, "output": "2 findings",
                "sub_calls": [
                    {"name": "llm_query", "model": sub_model, "arguments": {"prompt": "audit db.py"},
                     "output": "SQL injection in query()", "input_tokens": 1200, "output_tokens": 150},
                    {"name": "llm_query", "model": sub_model, "arguments": {"prompt": "audit auth.py"},
                     "output": "MD5 password hashing", "input_tokens": 900, "output_tokens": 120},
                ],
            })
        else:
            calls.append({"name": "python", "arguments": {"code": f"print(codebase['f{i}.py'])"}, "output": "..."})
        turns.append({"role": "assistant", "content": f"Step {i + 1}.", "tool_calls": calls})
    return turns


def rollouts_for(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i in range(6):
        ex = EXAMPLES[i % 3]
        out.append({
            "uid": f"{spec['model']}-{i}",
            "example_key": ex,
            "sample_index": i // 3,
            "reward": spec["rewards"][i],
            "reward_components": {"delegation_reward": spec["rewards"][i]},
            "num_turns": spec["turns"][i],
            "input_tokens": spec["input"][i],
            "output_tokens": spec["output"][i],
            "stop_condition": "episode_done",
            "final_answer": "SQL injection in db.py; MD5 hashing in auth.py; hardcoded secret in settings.py",
            "turns": trajectory(spec["turns"][i], spec["delegates"][i], spec["model"].split(":")[0]),
        })
    return out


def seed_002(project: Any, *, with_training: bool = True) -> dict[str, Any]:
    """Creates the runs; returns {name: Run} plus 'train' when with_training."""
    out: dict[str, Any] = {}
    train = None
    if with_training:
        train, _ = run_create(project=project, name="Qwen3-30B-A3B GRPO (LoRA, 100 steps)", kind="train",
                              status="finished", model=M30, environment=ENV, method="grpo",
                              config={"batch_size": 128, "rollouts_per_example": 8, "lora": True})
        metrics_ingest(run=train, points=[{"step": s, "values": {"reward": r, "num_turns": t}}
                                          for s, r, t in PROGRESSION])
        out["train"] = train
    for name, spec in RUNS.items():
        parent, step = None, None
        if train is not None and spec["model"] != M8:
            parent, step = train, (0 if spec["model"] == M30 else 99)
        run, _ = run_create(project=project, name=name, kind="eval", status="finished", model=spec["model"],
                            environment=ENV, source="prime", parent=parent, checkpoint_step=step)
        rollouts_ingest(run=run, rollouts=rollouts_for(spec))
        out[name] = run
    if train is not None:
        mid = {"model": M30T, "rewards": [0.70, 0.95, 1.0, 0.90, 0.85, 1.0], "turns": [9, 6, 6, 7, 6, 6],
               "input": [12000, 9000, 9000, 10000, 9500, 9000], "output": [2500] * 6, "delegates": [True] * 6}
        run, _ = run_create(project=project, name="Qwen3-30B-A3B (GRPO step 50)", kind="eval", status="finished",
                            model=M30T + "-step50", environment=ENV, source="prime", parent=train, checkpoint_step=50)
        recs = rollouts_for(mid)
        for r in recs:
            r["uid"] = "mid-" + r["uid"]
        rollouts_ingest(run=run, rollouts=recs)
        out["step50"] = run
    return out
