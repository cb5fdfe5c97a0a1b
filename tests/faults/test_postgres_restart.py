"""Postgres restarts while a training program logs: the client retries and every point and rollout
is stored exactly once. Everything is real: a throwaway Postgres, gunicorn, the client."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import psycopg
import pytest

import deeprepo_client
from bench.common import web_server
from tests.conftest import REPO
from tests.factories import rollout
from tests.infra._proc import ServiceUnavailable
from tests.infra.postgres import start_postgres


@pytest.fixture
def own_postgres():
    try:
        cluster = start_postgres()
    except ServiceUnavailable as exc:
        pytest.skip(str(exc))
    yield cluster
    cluster.destroy()


def test_postgres_restart_during_logging_loses_and_doubles_nothing(own_postgres, tmp_path, capfd):
    env = {**os.environ, "DATABASE_URL": own_postgres.url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=REPO, env=env, check=True)
    key = subprocess.run([sys.executable, "manage.py", "create_api_key", "--project", "p", "--create"], cwd=REPO,
                         env=env, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with web_server(own_postgres.url, workers=1, threads=2) as site:
        run = deeprepo_client.init(name="through-a-restart", url=site, api_key=key, spool_dir=tmp_path,
                                   flush_interval=0.05)
        restarted = threading.Event()

        def restart() -> None:
            time.sleep(0.6)
            own_postgres.stop("immediate")  # a crash, not a polite shutdown
            time.sleep(2.0)
            own_postgres.start()
            restarted.set()

        threading.Thread(target=restart, daemon=True).start()
        for step in range(400):
            run.log({"reward": step / 400, "loss": 1 - step / 400}, step=step)
            if step % 10 == 0:
                run.log_rollouts([rollout(f"ex-{step}-{i}", step=step) for i in range(3)])
            time.sleep(0.01)
        assert restarted.wait(30)
        assert run.finish(timeout=90).ok
    assert "server away" in capfd.readouterr().err  # the outage was really seen by the client
    with psycopg.connect(own_postgres.url) as conn:
        points = conn.execute(
            "SELECT count(*) FROM runs_metric m JOIN runs_metricseries s ON s.id = m.series_id "
            "JOIN runs_run r ON r.id = s.run_id WHERE r.name = 'through-a-restart'").fetchone()[0]
        rollouts = conn.execute("SELECT count(*) FROM runs_rollout").fetchone()[0]
        status = conn.execute("SELECT status FROM runs_run WHERE name = 'through-a-restart'").fetchone()[0]
        stats = conn.execute("SELECT count, last_step FROM runs_metricseries WHERE key = 'reward'").fetchone()
    assert points == 800
    assert rollouts == 40 * 3
    assert status == "finished"
    assert stats == (400, 399)
