"""A real Celery worker (with embedded beat) on Redis, pointed at the pytest database.

Session-scoped: started once after the test database exists. Tests that use it need
`transactional_db` so their rows are committed where the worker can see them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def redis_db_number() -> int:
    """A Redis database of our own (1..15), so parallel test sessions do not share queues."""
    if os.environ.get("DEEPREPO_JOBS_REDIS_DB"):
        return int(os.environ["DEEPREPO_JOBS_REDIS_DB"])
    return 1 + zlib.crc32(os.environ.get("DEEPREPO_TEST_DB", "test_deeprepo").encode()) % 15


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    log: Path
    broker_url: str
    root: Path
    env: dict[str, str]

    @property
    def hostname(self) -> str:
        """The node name it announced (`<name>-<random>@<host>`), read from its log."""
        import re

        m = re.search(r"(\S+@\S+) ready\.", self.log_text())
        return m.group(1) if m else ""

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def pool_children(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]


def _redis_ok(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=2).ping()
        return True
    except Exception:  # noqa: BLE001
        return False


def start_worker(db_name: str, secret_key: str, concurrency: int = 4, sync_seconds: float = 1.0,
                 extra_env: dict[str, str] | None = None, broker_url: str | None = None,
                 flush: bool = True, queues: tuple[str, ...] = (), beat: bool = True,
                 name: str = "jobs-test") -> Worker:
    """queues: consume only these (`-Q`), as a worker started beside one cluster does; default:
    the default queue. beat: embed beat (one per test session is enough)."""
    url = broker_url or f"redis://127.0.0.1:6379/{redis_db_number()}"
    if not _redis_ok(url):
        if os.environ.get("DEEPREPO_REQUIRE_CLUSTERS") == "1":
            pytest.fail(f"Redis is not reachable at {url}")
        pytest.skip(f"Redis is not reachable at {url}")
    import redis

    if flush:
        redis.Redis.from_url(url).flushdb()  # only our own database number
    root = Path(tempfile.mkdtemp(prefix="deeprepo-worker-"))
    root.chmod(0o755)
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db_name}",
        "CELERY_BROKER_URL": url,
        "SECRET_KEY": secret_key,
        "DEEPREPO_CONN_MAX_AGE": "0",
        "DEEPREPO_DATA_DIR": str(root / "data"),
        "DEEPREPO_JOB_SYNC_SECONDS": str(sync_seconds),
        "DEEPREPO_JOB_DISPATCH_ATTEMPTS": "3",
        "DEEPREPO_JOB_RETRY_SECONDS": "0.5",
        # Beat's search indexer reads the runs tables in one transaction; a pass that overlaps a
        # test's TRUNCATE flush can deadlock with it. Tests that search index by calling it.
        "DEEPREPO_SEARCH_INDEX_SECONDS": "86400",
        "DJANGO_SETTINGS_MODULE": "deeprepo_web.settings",
        # Each test's flush empties the table of live workers: say it again soon after.
        "DEEPREPO_WORKER_HEARTBEAT_SECONDS": "0.5",
        # The judge tests' stand-in endpoint listens on loopback (tests/judge/loopback.py).
        "DEEPREPO_OUTBOUND_ALLOW": "127.0.0.1/32",
    }
    env.update(extra_env or {})
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    log = root / "worker.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.celery", "worker",
             *(["-B", "-s", str(root / "beat-schedule")] if beat else []),
             *(["-Q", ",".join(queues)] if queues else []),
             "-l", "info", "-c", str(concurrency), "-n",
             f"{name}-{uuid.uuid4().hex[:6]}@%h", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    worker = Worker(proc, log, url, root, env)
    deadline = time.monotonic() + 60
    while " ready." not in worker.log_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_worker(worker)
            raise RuntimeError(f"celery worker did not start:\n{worker.log_text()[-3000:]}")
        time.sleep(0.2)
    return worker


def wait_listening(worker: Worker, timeout: float = 30) -> None:
    """Until the worker's heartbeat is in the database (a transactional test's flush removed it)."""
    from deeprepo_web.jobs.models import WorkerQueue

    deadline = time.monotonic() + timeout
    while not WorkerQueue.objects.filter(hostname=worker.hostname).exists():
        if worker.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"worker {worker.hostname} never said it listens:\n{worker.log_text()[-3000:]}")
        time.sleep(0.1)


def stop_worker(worker: Worker) -> None:
    if worker.proc.poll() is None:
        os.killpg(worker.proc.pid, signal.SIGTERM)
        try:
            worker.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.proc.pid, signal.SIGKILL)
            worker.proc.wait(timeout=10)


def point_app_at(url: str) -> None:
    """Make this (the test) process enqueue on the worker's broker."""
    from workers.celery import app

    app.conf.broker_url = url
    app.conf.broker_transport_options = {"visibility_timeout": 600}
    # Pools made for the old URL (an earlier test may have enqueued): drop them, the next use
    # builds new ones on this URL.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: object, django_db_blocker: object) -> Iterator[Worker]:
    from django.conf import settings

    worker = start_worker(str(settings.DATABASES["default"]["NAME"]), settings.SECRET_KEY)
    point_app_at(worker.broker_url)
    yield worker
    stop_worker(worker)
    if os.environ.get("DEEPREPO_KEEP_WORKER_LOG"):
        print(worker.log_text()[-5000:])
