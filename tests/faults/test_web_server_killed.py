"""The web server is SIGKILLed while a training program logs with several requests in flight, then
comes back: every point and rollout is stored exactly once, and series counts are not doubled.
Everything is real: gunicorn on the test database, the client, its spool."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from django.conf import settings

import deeprepo_client
from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run, Turn
from tests.conftest import REPO
from tests.factories import rollout

pytestmark = pytest.mark.django_db(transaction=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _gunicorn(port: int) -> subprocess.Popen[bytes]:
    head = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres").rpartition("/")[0]
    env = {**os.environ, "DATABASE_URL": f"{head}/{settings.DATABASES['default']['NAME']}", "LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "deeprepo_web.wsgi", "-b", f"127.0.0.1:{port}",
                             "-w", "3", "--preload", "--log-level", "warning"], cwd=REPO, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2)
            return proc
        except OSError:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
            time.sleep(0.2)


def test_web_server_killed_mid_run_loses_and_doubles_nothing(team, tmp_path, capfd):
    port = _free_port()
    server = {"proc": _gunicorn(port)}
    run = deeprepo_client.init(name="through-a-kill", url=f"http://127.0.0.1:{port}", api_key=team.key,
                               spool_dir=tmp_path, flush_interval=0.05, batch_points=2000, in_flight=3,
                               request_bytes=100_000)
    restarted = threading.Event()

    def kill_and_restart() -> None:
        time.sleep(0.8)
        os.killpg(server["proc"].pid, signal.SIGKILL)  # mid-request, no goodbye
        server["proc"].wait()
        time.sleep(1.5)
        server["proc"] = _gunicorn(port)
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
