"""A world of its own for the scale tests: a primary Postgres, a streaming replica made with
pg_basebackup, PgBouncer in transaction mode in front of the primary, and gunicorn web processes
configured with them. The suite's test database is not involved (these servers own their data)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests

from tests.conftest import REPO
from tests.infra._proc import ServiceUnavailable, free_port
from tests.infra.postgres import PgBouncer, PostgresCluster, start_pgbouncer, start_postgres, start_replica

DB = "deeprepo"


@dataclass
class Pair:
    primary: PostgresCluster
    replica: PostgresCluster
    bouncer: PgBouncer
    data_dir: Path
    ids: dict[str, Any]

    def sql(self, cluster: PostgresCluster, query: str, dbname: str = DB) -> list[tuple[Any, ...]]:
        with psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname=dbname,
                             autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(query)
            return cur.fetchall() if cur.description else []

    def caught_up(self) -> bool:
        lsn = self.sql(self.primary, "SELECT pg_current_wal_lsn()::text")[0][0]
        return bool(self.sql(self.replica, f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn")[0][0])


def _env(database_url: str, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPREPO_", "DATABASE_URL"))}
    return {**env, "DATABASE_URL": database_url, "DEEPREPO_DATA_DIR": str(data_dir), "DEEPREPO_CONN_MAX_AGE": "0",
            "LOG_LEVEL": "WARNING", "SECRET_KEY": "scale-tests-secret-key", **extra}


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _poll(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def pair() -> Iterator[Pair]:
    try:
        primary = start_postgres()
    except ServiceUnavailable as exc:
        pytest.skip(str(exc))
    data_dir = Path(tempfile.mkdtemp(prefix="deeprepo-scale-data-"))
    replica = bouncer = None
    try:
        subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres", "-c",
                        f"CREATE DATABASE {DB}"], check=True, capture_output=True)
        env = _env(f"postgres://postgres@127.0.0.1:{primary.port}/{DB}", data_dir)
        _manage(env, "migrate", "-v0")
        ids = json.loads(_manage(env, "shell", "-c", "from tests.scale.seed import seed; seed()").splitlines()[-1])
        replica = start_replica(primary)
        bouncer = start_pgbouncer(primary, DB)
        world = Pair(primary=primary, replica=replica, bouncer=bouncer, data_dir=data_dir, ids=ids)
        _poll(world.caught_up, "replica catching up")
        yield world
    finally:
        if bouncer is not None:
            bouncer.stop()
        if replica is not None:
            replica.destroy()
        primary.destroy()
        shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class Web:
    base: str
    proc: subprocess.Popen[bytes]

    def login(self, username: str) -> requests.Session:
        s = requests.Session()
        s.get(f"{self.base}/login/", timeout=30)
        res = s.post(f"{self.base}/login/", data={"username": username, "password": f"{username}-pass-123",
                                                  "csrfmiddlewaretoken": s.cookies["csrftoken"]},
                     headers={"Referer": f"{self.base}/login/"}, timeout=30, allow_redirects=False)
        assert res.status_code == 302, res.text[:500]
        return s


def start_web(pair: Pair, workers: int = 2, **settings: str) -> Web:
    """gunicorn (two worker processes unless told): DATABASE_URL through PgBouncer, page reads from the replica."""
    port = free_port()
    env = _env(pair.bouncer.url(DB), pair.data_dir, DEEPREPO_PGBOUNCER="1",
               DEEPREPO_REPLICA_URL=f"postgres://postgres@127.0.0.1:{pair.replica.port}/{DB}", **settings)
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "deeprepo_web.wsgi", "-b", f"127.0.0.1:{port}",
                             "-w", str(workers), "--log-level", "warning", "--timeout", "120"], cwd=REPO, env=env,
                            start_new_session=True)
    web = Web(base=f"http://127.0.0.1:{port}", proc=proc)

    def answers() -> bool:
        assert proc.poll() is None, "gunicorn exited"
        try:
            return requests.get(f"{web.base}/login/", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    try:
        _poll(answers, "gunicorn", timeout=120)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return web


def stop_web(web: Web) -> None:
    os.killpg(web.proc.pid, signal.SIGTERM)
    try:
        web.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(web.proc.pid, signal.SIGKILL)
        web.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def web(pair: Pair) -> Iterator[Web]:
    """Reads may lag a long way (so a paused replica keeps serving), probed on every read."""
    server = start_web(pair, DEEPREPO_REPLICA_MAX_LAG_SECONDS="600", DEEPREPO_REPLICA_CHECK_SECONDS="0",
                       DEEPREPO_READ_YOUR_WRITES_SECONDS="600")
    yield server
    stop_web(server)
