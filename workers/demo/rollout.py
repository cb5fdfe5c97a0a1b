"""Play one episode with the policy and turn it into a RolloutRecord."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from workers.demo.codebase import Codebase
from workers.demo.env import (
    ACTIONS,
    ROOT_PRICE,
    SYSTEM_PROMPT,
    AuditEnv,
    features,
    price,
)
from workers.demo.policy import SoftmaxPolicy


@dataclass
class Episode:
    """What one rollout produced: the decisions for the policy gradient and the record to upload."""

    features: np.ndarray  # (turns, F)
    actions: np.ndarray  # (turns,)
    reward: float
    components: dict[str, float]
    record: dict[str, Any]


def play(
    policy: SoftmaxPolicy,
    codebase: Codebase,
    rng: np.random.Generator,
    *,
    max_turns: int = 12,
    temperature: float = 1.0,
    step: int | None = None,
    sample_index: int = 0,
) -> Episode:
    started = time.perf_counter()
    env = AuditEnv(codebase, rng, max_turns=max_turns)
    feats: list[np.ndarray] = []
    acts: list[int] = []
    while not env.state.done and env.state.turn < max_turns:
        phi = features(env.state)
        action = policy.act(phi, rng, temperature=temperature)
        feats.append(phi)
        acts.append(action)
        env.step(action)
    reward, components, metrics = env.score()
    truncated = not env.state.done
    root_in = sum(t["input_tokens"] for t in env.turns)
    root_out = sum(t["output_tokens"] for t in env.turns)
    root_cost = price(ROOT_PRICE, root_in, root_out)
    for name in ACTIONS:
        metrics[f"tool_calls/{name}"] = sum(1 for a in acts if ACTIONS[a] == name)
    metrics.update({
        "root_input_tokens": root_in,
        "root_output_tokens": root_out,
        "sub_input_tokens": env.sub_in,
        "sub_output_tokens": env.sub_out,
        "cost_root": round(root_cost, 8),
        "cost_sub": round(env.sub_cost, 8),
    })
    record: dict[str, Any] = {
        "example_key": codebase.key,
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": env.task_prompt()},
        ],
        "oracle": "\n".join(f"- {b.path}: {b.kind} (line {b.line})" for b in codebase.bugs),
        "example_info": {"seed": codebase.seed, "files": len(codebase.files), "bugs": len(codebase.bugs)},
        "step": step,
        "sample_index": sample_index,
        "reward": reward,
        "reward_components": components,
        "advantage": None,  # filled in by the trainer once the group is complete
        "num_turns": len(env.turns),
        "input_tokens": root_in + env.sub_in,
        "output_tokens": root_out + env.sub_out,
        "cost": round(root_cost + env.sub_cost, 8),
        "is_truncated": truncated,
        "stop_condition": "max_turns_reached" if truncated else "episode_done",
        "error": None,
        # The episode's time as the agent would have spent it: every model turn's latency and every
        # tool call's run time (the numpy simulation itself takes well under a millisecond).
        "duration": round(time.perf_counter() - started + _simulated_seconds(env.turns), 3),
        "final_answer": env.report() if env.state.done else None,
        "metrics": metrics,
        "turns": env.turns,
    }
    return Episode(
        features=np.array(feats),
        actions=np.array(acts, dtype=int),
        reward=reward,
        components=components,
        record=record,
    )


def _simulated_seconds(turns: list[dict[str, Any]]) -> float:
    return sum(float(t.get("latency") or 0) + sum(float(c.get("duration") or 0) for c in t.get("tool_calls") or [])
               for t in turns)
