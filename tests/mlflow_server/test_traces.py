"""A trace made outside any MLflow run (`mlflow.start_span`) lands as a rollout of the experiment's
`<name> traces` run; the client's span export and trace info both go through without an error."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from deeprepo_web.mlflow_server.models import PendingSpan, Trace
from deeprepo_web.runs.models import Rollout, Run
from tests.mlflow_server.test_tracking import mlflow_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

AGENT = """
import mlflow
from mlflow.entities import SpanType
mlflow.set_experiment("agents")
for i in range(2):
    with mlflow.start_span(name="episode", span_type=SpanType.AGENT) as root:
        root.set_inputs({"task": f"t{i}"})
        with mlflow.start_span(name="llm", span_type=SpanType.CHAT_MODEL) as chat:
            chat.set_inputs({"messages": [{"role": "user", "content": f"Say {i} <b>bold</b>"}], "model": "policy-1b"})
            chat.set_outputs({"choices": [{"message": {"role": "assistant", "content": f"{i}"},
                                           "finish_reason": "stop"}], "usage": {"prompt_tokens": 5,
                                                                               "completion_tokens": 1}})
        root.set_outputs({"reward": float(i)})
"""


def test_traces_outside_a_run_land_in_the_experiments_traces_run(live_server: Any, team: Any) -> None:
    done = subprocess.run([sys.executable, "-c", AGENT], env=mlflow_env(live_server.url, team.key),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0 and "Failed to" not in done.stderr, done.stderr[-3000:]
    run = Run.objects.get(project=team.project, name="agents traces")
    assert run.source == "mlflow" and run.tags == ["experiment=agents"]
    rollouts = list(Rollout.objects.filter(run=run).order_by("reward"))
    assert [(r.reward, r.final_answer) for r in rollouts] == [(0.0, "0"), (1.0, "1")]
    assert [t.content for t in rollouts[1].turns.order_by("index")] == ["Say 1 <b>bold</b>", "1"]
    assert (rollouts[1].input_tokens, rollouts[1].output_tokens) == (5, 1)
    assert Trace.objects.filter(run=run).count() == 2 and not PendingSpan.objects.exists()
