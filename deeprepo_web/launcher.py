"""`make run` and `deeprepo-web server`: everything on one machine, stopped together on Ctrl-C.

An embedded Postgres (pgserver, data under .data/pg) when DATABASE_URL is unset; migrations; a demo
login, project and API key; a Celery worker and beat (filesystem broker unless CELERY_BROKER_URL is
set); the web app on 127.0.0.1:8000; and the demo GRPO template launched as a real job on the
project's local cluster, to watch, with a checkpoint-eval rule: each checkpoint it logs gets its own
eval job, linked to the run at that step.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deeprepo_web import embedded_db

ROOT = Path(__file__).resolve().parent.parent


def _say(message: str) -> None:
    print(f"\033[1m[deeprepo]\033[0m {message}", flush=True)


def _shown(url: str) -> str:
    """The database address without its password."""
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return url


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 600) -> bool:
    """True once `url` answers; False if the server process exits (or never answers) first. A busy
    machine can take a minute to preload the app: waiting is bounded by the process, not a guess."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return True
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.3)
    return False


def main() -> int:
    data_dir = embedded_db.data_dir()
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["DEEPREPO_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    host = os.environ.get("DEEPREPO_HOST", "127.0.0.1")
    port = os.environ.get("DEEPREPO_PORT", "8000")
    site = f"http://{host}:{port}"
    os.environ.setdefault("SITE_URL", site)
    pg = None
    if not os.environ.get("DATABASE_URL"):
        _say(f"DATABASE_URL is unset: starting an embedded Postgres in {data_dir / 'pg'}")
        pg = embedded_db.embedded_db_start(data_dir)
    # `manage.py` in another terminal finds the same embedded server by itself (DATABASE_URL unset).
    _say(f"database: {_shown(os.environ['DATABASE_URL'])}")
    py = sys.executable
    # Local jobs (the demo among them) run `python`: make it this interpreter, with its packages.
    os.environ["PATH"] = f"{Path(py).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    # Not ROOT/manage.py: installed from a wheel there is none (ROOT is then site-packages).
    manage = [py, "-m", "deeprepo_web.cli", "manage"]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], check=True, cwd=ROOT)
    boot = subprocess.run(
        [*manage, "bootstrap_demo", "--url", site], check=True, cwd=ROOT, capture_output=True, text=True
    )
    # The worker serves the default queue and every local cluster's own (the demo's among them):
    # a local cluster given a queue would otherwise wait for a worker that never comes.
    queues = subprocess.run([*manage, "local_queues"], check=True, cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()

    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    started = datetime.now(UTC).isoformat()
    # Ctrl-C from here on stops everything in order, also while the web app is still starting or the
    # demo is being launched (a KeyboardInterrupt there left Postgres and the parts running).
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)

    def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        # Its own session: Ctrl-C reaches only this launcher, which stops each of the others once
        # (a worker given the terminal's SIGINT and then our SIGTERM logged a cold shutdown).
        proc = subprocess.Popen(argv, cwd=ROOT, env=env or os.environ.copy(), start_new_session=True)
        procs.append((name, proc))
        return proc

    try:
        # --quiet: no banner. Celery warns at length when run as root (containers): not for this log.
        quiet = "ignore:You're running the worker with superuser privileges"
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), quiet]))
        celery = [py, "-m", "celery", "-A", "workers.celery", "--quiet"]
        # Warnings only: beat fires sync_jobs every 2 s, and every job transition is on its page anyway.
        spawn("worker", [*celery, "worker", "-l", "warning", "-c", "4", "-n", "deeprepo@%h", "-Q", queues])
        spawn("beat", [*celery, "beat", "-l", "warning", "-s", str(data_dir / "celerybeat-schedule")])
        web = spawn("web", [py, "-m", "gunicorn", "deeprepo_web.wsgi", "-b", f"{host}:{port}", "-w", "4",
                            "--threads", "1", "--preload", "--access-logfile", "-", "--timeout", "120"])
        if not stopping and _wait_http(f"{site}/login/", web):
            # The login only once it works: printed earlier, it was tried against a server not up yet.
            print(boot.stdout, end="", flush=True)
            _say(f"web app on {site}/  (log in with the demo login above)")
            # A real job on the local cluster: dispatched by the worker, followed by beat, with a log
            # tail, a run and a cancel button on its page.
            if not stopping:
                demo = subprocess.run([*manage, "launch_demo", "--url", site], cwd=ROOT, capture_output=True,
                                      text=True)
                print(demo.stdout + demo.stderr, end="", flush=True)
        elif not stopping:
            _say("the web app did not come up; see its log above")
        _say("Ctrl-C stops everything")

        while not stopping:
            for name, proc in procs:
                if proc.poll() is not None:
                    _say(f"{name} exited with code {proc.returncode}; stopping")
                    stopping = True
            time.sleep(0.5)
    finally:
        # One signal each, all at once (waiting in turn outlasts make's patience on a busy machine):
        # SIGTERM everywhere. gunicorn's graceful stop answers the requests in flight (the demo job
        # logs until it is stopped below; its quick SIGINT exited mid-request with a traceback), and
        # beat and the worker's warm shutdown lets running tasks finish while the database is up.
        for _, proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for _, proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        # Local jobs run in their own process groups (they outlive a worker restart by design):
        # the ones this session launched are stopped here, or named if they could not be.
        try:
            left = subprocess.run([*manage, "stop_local_jobs", "--since", started], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
            print(left.stdout + left.stderr, end="", flush=True)
        except subprocess.TimeoutExpired:
            _say("local jobs launched by this session may still run: see the Jobs page")
        if pg is not None:
            pg.cleanup()
        _say("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
