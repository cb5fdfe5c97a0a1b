"""Helpers shared by the benchmarks: a scratch database, a real web server, an API key, a p95."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
BASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
# (all of it, its TOAST part) on disk for the turns documents' table: bench/run_delete.py, bench/turns_storage.py.
TURNS_DOC_SIZE_SQL = ("SELECT pg_total_relation_size(oid), coalesce(pg_total_relation_size(nullif(reltoastrelid, 0)), 0) "
                      "FROM pg_class WHERE relname = 'runs_rolloutturns'")


def samples_dir() -> Path:
    """The real sample files: $DEEPREPO_SAMPLES, else ../shared/samples beside the checkout (as the tests
    find them, tests/conftest.py)."""
    env = os.environ.get("DEEPREPO_SAMPLES")
    return Path(env) if env else ROOT.parent / "shared" / "samples"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def db_url(name: str) -> str:
    """The URL of database `name` on the server DATABASE_URL names."""
    head, _, _ = BASE_URL.rpartition("/")
    return f"{head}/{name}"


def scratch_database(name: str) -> str:
    """A fresh, migrated database next to the one DATABASE_URL names; returns its URL."""
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = db_url(name)
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    return url


def api_key(url: str, project: str) -> str:
    env = {**os.environ, "DATABASE_URL": url}
    out = subprocess.run([sys.executable, "manage.py", "create_api_key", "--project", project, "--create"],
                         cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def p95(values: list[float]) -> float | None:
    """The 95th percentile: the value ranked 0.95 of the way from the lowest to the highest, to 0.1;
    None for no values."""
    if not values:
        return None
    s = sorted(values)
    return round(s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))], 1)


@contextmanager
def web_server(url: str, workers: int = 2, threads: int = 4, root: Path = ROOT) -> Iterator[str]:
    """gunicorn serving the checkout at `root` (another worktree's code, for an A/B bench)."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": url, "DEEPREPO_CONN_MAX_AGE": "600", "LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "deeprepo_web.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(workers),
         "--threads", str(threads), "--timeout", "300", "--log-level", "warning"],
        cwd=root, env=env,
    )
    site = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{site}/login/", timeout=2)
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield site
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            # gunicorn's graceful stop waits up to 30 s for open keep-alive connections; on a busy
            # machine that overran the wait and lost the bench's figures with a traceback.
            proc.kill()
            proc.wait(timeout=10)
