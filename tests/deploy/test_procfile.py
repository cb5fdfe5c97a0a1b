"""The Procfile of docs/deploy.md starts a working deployment on this machine: web answers, the worker
takes tasks from Redis, beat runs. Each process is started exactly as written, by bash."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bench.common import api_key, free_port, scratch_database
from tests.conftest import REPO


def _procfile() -> dict[str, str]:
    lines = (REPO / "Procfile").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.strip() and not line.startswith("#"))


def test_procfile_starts_web_worker_and_beat(tmp_path: Path) -> None:
    try:
        subprocess.run(["redis-cli", "-h", "127.0.0.1", "ping"], check=True, capture_output=True, timeout=5)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    url = scratch_database("deeprepo_test_procfile")
    port = free_port()
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "DATABASE_URL": url, "PORT": str(port), "WEB_CONCURRENCY": "1", "WORKER_CONCURRENCY": "1",
           "CELERY_BROKER_URL": "redis://127.0.0.1:6379/14", "DEEPREPO_DATA_DIR": str(tmp_path),
           "PATH": f"{venv_bin}:{os.environ['PATH']}"}
    procs = {name: subprocess.Popen(["bash", "-c", f"exec {cmd}"], cwd=REPO, env=env, start_new_session=True,
                                    stdout=open(tmp_path / f"{name}.log", "wb"), stderr=subprocess.STDOUT)
             for name, cmd in _procfile().items()}
    try:
        key = api_key(url, "deploy")
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=2) as res:
                    assert res.status == 200
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "web.log").read_text()[-2000:]
                time.sleep(0.3)
        req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/runs", data=b'{"name": "deployed"}',
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as res:
            assert res.status == 201
        from celery import Celery

        probe = Celery("probe", broker=env["CELERY_BROKER_URL"])  # not the app: its config stays as the suite set it
        replies: list = []
        while not replies and time.monotonic() < deadline:
            replies = probe.control.ping(timeout=1.0)
        assert replies, (tmp_path / "worker.log").read_text()[-2000:]
        assert all(p.poll() is None for p in procs.values()), {n: p.returncode for n, p in procs.items()}
        assert "beat: Starting" in (tmp_path / "beat.log").read_text()
    finally:
        for proc in procs.values():
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
