"""The web server is SIGKILLed while a training program logs with several requests in flight, then
comes back: every point and rollout is stored exactly once, and series counts are not doubled.
Everything is real: gunicorn on the test database, the client, its spool."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import deeprepo_client
from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run, Turn
from tests.factories import rollout
from tests.gunicorn import free_port, gunicorn

pytestmark = pytest.mark.django_db(transaction=True)


def test_web_server_killed_mid_run_loses_and_doubles_nothing(team, tmp_path, capfd):
    port = free_port()
    server = {"proc": gunicorn(port)}
    run = deeprepo_client.init(name="through-a-kill", url=f"http://127.0.0.1:{port}", api_key=team.key,
                               spool_dir=tmp_path, flush_interval=0.05, batch_points=2000, in_flight=3,
                               request_bytes=100_000)
    restarted = threading.Event()

    def kill_and_restart() -> None:
        time.sleep(0.8)
        os.killpg(server["proc"].pid, signal.SIGKILL)  # mid-request, no goodbye
        server["proc"].wait()
        time.sleep(1.5)
        server["proc"] = gunicorn(port)
        restarted.set()

    threading.Thread(target=kill_and_restart, daemon=True).start()
    try:
        for step in range(3000):
            run.log({"reward": step / 3000, "loss": 1 - step / 3000, "kl": 0.01}, step=step)
            if step % 50 == 0:
                run.log_rollouts([rollout(f"ex-{step}-{i}", step=step) for i in range(4)])
            time.sleep(0.001)
        assert restarted.wait(90)
        summary = run.finish(timeout=120)
    finally:
        if server["proc"].poll() is None:
            os.killpg(server["proc"].pid, signal.SIGTERM)
            server["proc"].wait(30)
    assert summary.ok, summary
    assert "server away" in capfd.readouterr().err  # the outage was really seen by the client
    stored = Run.objects.get(public_id=run.id)
    assert stored.status == "finished"
    assert Metric.objects.filter(series__run=stored).count() == 9000
    assert sorted(MetricSeries.objects.filter(run=stored).values_list("count", flat=True)) == [3000] * 3
    assert Rollout.objects.filter(run=stored).count() == 60 * 4
    turns = len(rollout("x")["turns"])
    assert Turn.objects.filter(rollout__run=stored).count() == 60 * 4 * turns
