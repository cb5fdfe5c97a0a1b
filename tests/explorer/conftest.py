"""Runs with metrics and rollouts for the explorer and run page tests, written through the real services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.factories import rollout


@dataclass
class Seeded:
    alpha: Any
    beta: Any
    gamma: Any
    evalrun: Any


def reward_points(values: list[float]) -> list[dict[str, Any]]:
    return [{"step": i, "time": 1_700_000_000.0 + 10 * i, "values": {"reward": v, "loss/policy": -v}}
            for i, v in enumerate(values)]


@pytest.fixture
def seeded(team: Any) -> Seeded:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    p = team.project
    alpha, _ = run_create(project=p, name="alpha-grpo", model="qwen-8b", environment="repo-audit",
                          config={"lr": 0.001, "optim": {"name": "adamw"}}, tags=["baseline"], status="finished",
                          notes="first try with the sandbox")
    beta, _ = run_create(project=p, name="beta-grpo", model="llama-8b", environment="swe-bench",
                         config={"lr": 0.01}, tags=["ablation", "paper"], status="running")
    gamma, _ = run_create(project=p, name="gamma-grpo", model="qwen-8b", environment="repo-audit",
                          config={"lr": 0.001}, status="failed")
    evalrun, _ = run_create(project=p, name="alpha-eval-300", kind="eval", model="qwen-8b", environment="repo-audit",
                            parent=alpha, checkpoint_step=300, status="finished")
    metrics_ingest(run=alpha, points=reward_points([0.1, 0.2, 0.3, 0.41]))
    metrics_ingest(run=beta, points=reward_points([0.5, 0.7, 0.9]))
    metrics_ingest(run=gamma, points=reward_points([0.2, 0.05]))
    rollouts_ingest(run=alpha, rollouts=[rollout(f"ex-{i % 2}", reward=0.5, step=0, sample_index=i, uid=f"a{i}",
                                                 turns=1) for i in range(4)])
    return Seeded(alpha, beta, gamma, evalrun)
