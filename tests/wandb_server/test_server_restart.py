"""Our server (gunicorn, a real process) is killed while the wandb SDK streams a run, and comes back:
the SDK retries what got no answer, and every step and console line is stored exactly once."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.runs.models import Metric, MetricSeries, Run
from deeprepo_web.wandb_server.models import ConsoleLine
from tests.faults.test_web_server_killed import _free_port, _gunicorn
from tests.wandb_server.sdk import sdk_env, start_script, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
STEPS = 400


def _stored_steps() -> int:
    series = MetricSeries.objects.filter(run__source="wandb", key="loss").first()
    return series.count if series else 0


def test_server_killed_mid_run_loses_and_doubles_nothing(team: Any, tmp_path: Path) -> None:
    port = _free_port()
    server = _gunicorn(port)
    env = sdk_env(f"http://127.0.0.1:{port}", team.key, tmp_path)
    proc = start_script(env, {"id": "restart1", "steps": STEPS, "sleep": 0.02, "print": True})
    try:
        wait_for(lambda: _stored_steps() >= 20, what="the first points through the first server")
        os.killpg(server.pid, signal.SIGKILL)  # mid-stream, no goodbye
        server.wait()
        at_kill = _stored_steps()
        assert at_kill < STEPS, "the run ended before the server was killed: nothing was tested"
        server = _gunicorn(port)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "SCRIPT-DONE" in out, err[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
    run = Run.objects.get(source="wandb")
    assert run.status == "finished"
    series = MetricSeries.objects.get(run=run, key="loss")
    steps = list(Metric.objects.filter(series=series).order_by("step").values_list("step", flat=True))
    assert steps == list(range(STEPS)) and series.count == STEPS
    lines = list(ConsoleLine.objects.filter(run=run, text__startswith="step ").values_list("text", flat=True))
    assert len(lines) == STEPS and len(set(lines)) == STEPS
