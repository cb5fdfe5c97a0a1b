"""The demo GRPO trainer, run as a real program, logs into a real server through the client."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deeprepo_web.runs.models import MetricSeries, Rollout, Run, ToolCall
from tests.conftest import REPO

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_grpo_logs_metrics_trajectories_and_linked_evals(live_server, team, tmp_path):
    env = {**os.environ, "DEEPREPO_URL": live_server.url, "DEEPREPO_API_KEY": team.key,
           "DEEPREPO_PROJECT": "demo", "DEEPREPO_SPOOL_DIR": str(tmp_path)}
    env.pop("DEEPREPO_RUN_ID", None)
    proc = subprocess.run(
        [sys.executable, "-m", "workers.demo_grpo", "--steps", "6", "--examples-per-step", "4",
         "--rollouts-per-example", "4", "--eval-examples", "3", "--eval-rollouts", "2", "--name", "demo-test"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    train = Run.objects.get(name="demo-test", kind="train")
    assert train.status == "finished"
    reward = MetricSeries.objects.get(run=train, key="reward")
    assert reward.count == 6 and reward.last_step == 5
    assert Rollout.objects.filter(run=train).count() == 6 * 4 * 4
    assert ToolCall.objects.filter(rollout__run=train, name="llm_batch", sub_calls__isnull=False).exists()
    evals = list(Run.objects.filter(parent=train, kind="eval").order_by("checkpoint_step"))
    assert [e.checkpoint_step for e in evals] == [0, 6]
    assert all(Rollout.objects.filter(run=e).count() == 3 * 2 for e in evals)
