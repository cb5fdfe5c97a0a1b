"""MLflow: a real tracking server (`mlflow server` on loopback) filled by the real `mlflow` client,
pulled with `manage.py import mlflow://… --experiment …` (params, tags, whole metric histories,
traces as rollouts), a server that goes away mid-pull (the next pull finishes, nothing doubled),
and mlflow-export-import folders from the shared samples."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.management import call_command

from deeprepo_client.formats.mlflow_server import pull
from deeprepo_web.importers.pipeline import import_events
from deeprepo_web.runs.models import Metric, Rollout, Run, ToolCall
from tests.importers.tcp_proxy import FlakyProxy
from tests.importers.writers.mlflow_fill import STEPS, reward

# Starting mlflow server and filling it takes minutes on a busy machine; setup counts toward the timeout.
pytestmark = pytest.mark.timeout(900)

FILL = Path(__file__).parent / "writers" / "mlflow_fill.py"
EXPERIMENT = "grpo-mlflow-test"


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: Any) -> Any:
    import socket

    root = tmp_path_factory.mktemp("mlflow")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(root / "server.log", "w")  # noqa: SIM115 (open for the server's lifetime)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{root}/mlflow.db",
         "--default-artifact-root", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (root / "server.log").read_text()[-3000:]
            time.sleep(0.5)
        done = subprocess.run([sys.executable, str(FILL), url, EXPERIMENT], capture_output=True, text=True,
                              timeout=300, cwd=root, env={**os.environ, "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"})
        assert done.returncode == 0, done.stderr[-3000:]
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def _series(run: Run, key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__run=run, series__key=key).values_list("step", "value"))


def _check(run: Run) -> None:
    assert (run.name, run.source, run.status, run.model) == ("grpo-mlflow", "mlflow", "finished", "tiny-policy")
    assert {k: run.config[k] for k in ("lr", "model", "rollout.n")} == {"lr": "1e-6", "model": "tiny-policy",
                                                                      "rollout.n": "4"}
    assert sorted(run.tags) == ["stage=dev", "team=rl"]
    # every step; at the last step MLflow holds two values and the later one counts
    assert _series(run, "train/reward") == {**{s: reward(s) for s in range(1, STEPS)}, STEPS: 0.0}
    assert _series(run, "train/kl") == {s: 0.5 / s for s in range(1, STEPS + 1)}
    assert _series(run, "eval/accuracy") == {10: 0.1, 20: 0.2, 30: 0.3}
    table = list(Rollout.objects.filter(run=run, metrics__table="rollouts/samples.json").order_by("sample_index")
                 .values_list("step", "example__key", "sample_index", "reward", "final_answer"))
    assert table == [(30, "1+1?", 0, 1.0, "2"), (30, "1+1?", 1, 0.0, "3")]
    rollouts = list(Rollout.objects.filter(run=run, uid__startswith="mlflow-tr-").order_by("id"))
    assert len(rollouts) == 2
    for r in rollouts:
        turns = list(r.turns.order_by("index"))
        assert [t.role for t in turns] == ["system", "user", "assistant", "assistant"]
        assert turns[3].content == "The answer is 42." == r.final_answer
        call = ToolCall.objects.get(rollout=r)
        assert (call.name, call.call_id, call.arguments, call.output) == ("calculator", "call_1", {"expr": "6*7"}, "42")
    assert sorted(t.content for r in rollouts for t in r.turns.filter(role="user")) == [
        "What is 6 * 7? (episode 0)", "What is 6 * 7? (episode 1)"]


@pytest.mark.django_db
def test_pull_an_experiment_from_a_live_server(mlflow_server: int, team: Any) -> None:
    out = []
    call_command("import", f"mlflow://127.0.0.1:{mlflow_server}", "--project", "demo", "--experiment", EXPERIMENT,
                 stdout=type("W", (), {"write": lambda self, s: out.append(s), "flush": lambda self: None})())
    assert any("created run grpo-mlflow" in line for line in out), out
    _check(Run.objects.get(project=team.project))
    call_command("import", f"mlflow://127.0.0.1:{mlflow_server}", "--project", "demo", "--experiment", EXPERIMENT)
    assert Run.objects.count() == 1 and Rollout.objects.count() == 4 and Metric.objects.count() == 2 * STEPS + 3


@pytest.mark.django_db
def test_server_going_away_mid_pull_resumes_without_doubling(mlflow_server: int, team: Any) -> None:
    proxy = FlakyProxy(("127.0.0.1", mlflow_server), limit=4)  # experiment, runs, one metric history, cut
    try:
        report = import_events(project=team.project, events=pull(proxy.url, EXPERIMENT, retry_seconds=1),
                               label="first", fmt="mlflow_server")
        fatal = [p for p in report.problems if p.get("fatal")]
        assert fatal and "stopped answering" in fatal[0]["message"], report.problems
        assert "run the same import again" in fatal[0]["message"]
        run = Run.objects.get()
        assert 0 < Metric.objects.filter(series__run=run).count() < 2 * STEPS + 3
        assert not Rollout.objects.exists()
        proxy.come_back()
        report = import_events(project=team.project, events=pull(proxy.url, EXPERIMENT, retry_seconds=5),
                               label="again", fmt="mlflow_server")
        assert not report.problems, report.problems
        _check(Run.objects.get())
        assert Metric.objects.count() == 2 * STEPS + 3
    finally:
        proxy.close()


@pytest.mark.django_db
@pytest.mark.parametrize("folder", ["export-run", "export-experiment"])
def test_export_folders_then_their_traces(samples: Path, do_import: Any, folder: str) -> None:
    report = do_import(samples / "mlflow" / folder)
    assert not report.problems, report.problems
    run = Run.objects.get()
    assert (run.name, run.source, run.external_id) == ("grpo-dev", "mlflow", "431b6c05612444889a239d2d5c92b323")
    assert run.config["rollout.n"] == "8" and sorted(run.tags) == ["framework=toy-grpo", "variant=dev"]
    assert len(_series(run, "train/reward")) == 40 and _series(run, "eval/accuracy").keys() == {10, 20, 30, 40}
    table = list(Rollout.objects.filter(run=run).order_by("step").values_list("step", "reward", "final_answer"))
    assert table == [(1, 0.0, "<tool_call>calculator"), (40, 1.0, "The answer is 42.")]
    # the traces saved beside the export land in the same run
    report = do_import(samples / "mlflow" / "traces-json")
    assert not report.problems and Run.objects.count() == 1 and Run.objects.get().name == "grpo-dev"
    traced = Rollout.objects.filter(run=run, uid__startswith="mlflow-tr-").order_by("step")
    assert [r.step for r in traced] == [10, 20, 30] and all(r.reward is not None for r in traced)
    assert ToolCall.objects.filter(rollout__in=traced, name="calculator").count() == 3


@pytest.mark.django_db(transaction=True)
def test_deeprepo_import_cli_pulls_through_the_api(mlflow_server: int, team: Any, live_server: Any,
                                                   capsys: Any) -> None:
    from deeprepo_client.cli import main

    argv = ["--url", live_server.url, "--api-key", team.key, "import", f"mlflow://127.0.0.1:{mlflow_server}",
            "--experiment", EXPERIMENT]
    assert main(argv) == 0, capsys.readouterr().err
    assert f"1 run(s), {2 * STEPS + 3} new points, 4 new rollouts" in capsys.readouterr().out
    _check(Run.objects.get(project=team.project))
    assert main(argv) == 0  # again: the same run, nothing new
    assert "1 run(s), 0 new points, 0 new rollouts" in capsys.readouterr().out
    assert Run.objects.count() == 1
