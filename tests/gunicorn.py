"""A real gunicorn on the test database, for tests that stop and start the web server under a client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from django.conf import settings

from tests.conftest import REPO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gunicorn(port: int, workers: int = 3) -> subprocess.Popen[bytes]:
    """Started on 127.0.0.1:port in its own process group (kill it with os.killpg); returns once it answers."""
    head = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres").rpartition("/")[0]
    env = {**os.environ, "DATABASE_URL": f"{head}/{settings.DATABASES['default']['NAME']}", "LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "deeprepo_web.wsgi", "-b", f"127.0.0.1:{port}",
                             "-w", str(workers), "--preload", "--log-level", "warning"], cwd=REPO, env=env,
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
