"""Runs with rollouts ingested through the real service (the same path as the API)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.factories import rollout


@dataclass
class Loaded:
    run: Any
    eval_run: Any
    ids: dict[str, int]  # uid -> rollout id


def ingest(run: Any, records: list[dict[str, Any]]) -> dict[str, int]:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout

    rollouts_ingest(run=run, rollouts=records)
    return dict(Rollout.objects.filter(run=run).values_list("uid", "id"))


@pytest.fixture
def loaded(team: Any) -> Loaded:
    """A train run: step 0 and 1 with 3 examples x 4 samples. At step 1 ex-a is all-fail, ex-b
    all-pass, ex-c mixed [0, 0.5, 1, 1]. Plus an eval run (step None) on ex-a."""
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="grpo-test", environment="env")
    records = []
    rewards = {
        0: {"ex-a": [0.0, 0.25, 0.5, 0.0], "ex-b": [1.0, 0.0, 1.0, 1.0], "ex-c": [0.0, 0.0, 0.0, 1.0]},
        1: {"ex-a": [0.0, 0.0, 0.0, 0.0], "ex-b": [1.0, 1.0, 1.0, 1.0], "ex-c": [0.0, 0.5, 1.0, 1.0]},
    }
    for step, per in rewards.items():
        for key, values in per.items():
            for i, value in enumerate(values):
                extra: dict[str, Any] = {}
                if key == "ex-c" and i == 1:
                    extra = {"error": "sandbox timed out", "stop_condition": "error"}
                if key == "ex-b" and i == 2:
                    extra = {"is_truncated": True, "stop_condition": "max_turns"}
                records.append(rollout(
                    key, reward=value, step=step, sample_index=i, uid=f"s{step}-{key}-{i}",
                    turns=1 + i + step, input_tokens=1000 * (i + 1), output_tokens=100 * (i + 1) + step,
                    prompt=[{"role": "user", "content": f"Audit {key}"}], oracle="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-bad\n+good",
                    **extra,
                ))
    ids = ingest(run, records)
    eval_run, _ = run_create(project=team.project, name="eval-test", kind="eval", environment="env")
    ids.update(ingest(eval_run, [rollout("ex-a", reward=r, step=None, sample_index=i, uid=f"e-{i}")
                                 for i, r in enumerate([1.0, 0.0])]))
    return Loaded(run=run, eval_run=eval_run, ids=ids)
