"""The importer's MLflow writer (the real client: params, tags, histories, log_table, two agent
traces with a tool call) pointed at this server instead of `mlflow server`: the same run lands live,
its traces arrive over OTLP (`x-mlflow-experiment-id`) and become rollouts of the run that made them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.mlflow_server.models import PendingSpan
from deeprepo_web.runs.models import Rollout, Run, ToolCall
from tests.importers.writers.mlflow_fill import STEPS, reward
from tests.mlflow_server.test_tracking import mlflow_env, series

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

FILL = Path(__file__).parent.parent / "importers" / "writers" / "mlflow_fill.py"


def test_the_importer_writer_lands_live_with_its_traces(live_server: Any, team: Any, tmp_path: Path,
                                                       browser_page: Any, screenshot_dir: str) -> None:
    env = mlflow_env(live_server.url, MLFLOW_TRACKING_USERNAME="trainer", MLFLOW_TRACKING_PASSWORD=team.key)
    done = subprocess.run([sys.executable, str(FILL), live_server.url, "grpo-live-traces"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Failed to" not in done.stderr, done.stderr[-3000:]  # no span or trace export refused
    run = Run.objects.get(project=team.project, name="grpo-mlflow")
    assert (run.source, run.status) == ("mlflow", "finished") and run.external_id in done.stdout
    assert sorted(run.tags) == ["experiment=grpo-live-traces", "stage=dev", "team=rl"]
    # one value a step; the second value MLflow allows at the last step is not kept (the first is)
    assert series(run, "train/reward") == {s: reward(s) for s in range(1, STEPS + 1)}
    assert series(run, "eval/accuracy") == {10: 0.1, 20: 0.2, 30: 0.3}
    table = list(Rollout.objects.filter(run=run, metrics__table="rollouts/samples.json").order_by("sample_index")
                 .values_list("step", "example__key", "sample_index", "reward", "final_answer"))
    assert table == [(30, "1+1?", 0, 1.0, "2"), (30, "1+1?", 1, 0.0, "3")]
    assert Artifact.objects.filter(run=run).count() == 1  # the table; no traces.json: spans came over OTLP

    traces = list(Rollout.objects.filter(run=run, uid__startswith="otlp-").order_by("id"))
    assert len(traces) == 2 and not PendingSpan.objects.exists()
    for r in traces:
        turns = list(r.turns.order_by("index"))
        assert [t.role for t in turns] == ["system", "user", "assistant", "assistant"]
        assert turns[3].content == "The answer is 42." == r.final_answer
        call = ToolCall.objects.get(rollout=r)
        assert (call.name, call.call_id, call.arguments, call.output) == ("calculator", "call_1", {"expr": "6*7"}, "42")
    assert sorted(t.content for r in traces for t in r.turns.filter(role="user")) == [
        "What is 6 * 7? (episode 0)", "What is 6 * 7? (episode 1)"]

    # What a researcher sees: the table on the Artifacts tab, the trace as a trajectory.
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/artifacts/")
    page.wait_for_selector("text=rollouts/samples.json")
    page.screenshot(path=f"{screenshot_dir}/mlflow-artifacts-tab.png", full_page=True)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/rollouts/{traces[0].pk}/")
    page.wait_for_selector("text=The answer is 42.")
    assert page.locator("text=calculator").count() >= 1
    page.screenshot(path=f"{screenshot_dir}/mlflow-trace-trajectory.png", full_page=True)
