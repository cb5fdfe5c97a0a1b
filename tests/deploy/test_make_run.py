"""A newcomer's first hour: `make run` in a fresh clone reaches a served login page, and `manage.py` in a
second terminal, with no variable set, uses the same embedded Postgres.

The clone is the repository's tracked files (as `git clone` gives them) in a temporary folder, with
its own .venv, data directory and free port. Where this machine ships the local torch wheel
directory, it is hidden for the run (a private mount namespace), as on a machine that lacks it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.common import free_port
from tests.conftest import REPO

WHEELS = Path("/opt/wheels")


def _clone(dest: Path) -> None:
    """The files a commit of the working tree would hold (so the test checks uncommitted work too)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, check=True, capture_output=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = REPO / name
        if not src.is_file():
            continue  # deleted in the working tree
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def _hiding_wheels(argv: list[str]) -> list[str]:
    """argv run where /opt/wheels is an empty folder, when the machine has one and allows it."""
    if not WHEELS.is_dir():
        return argv
    hide = ["unshare", "-m", "--propagation", "private", "sh", "-c", f'mount -t tmpfs none {WHEELS} && exec "$@"', "sh"]
    probe = subprocess.run([*hide, "sh", "-c", f'test -z "$(ls -A {WHEELS})"'], capture_output=True)
    if probe.returncode != 0:
        pytest.fail(f"cannot hide {WHEELS} (unshare -m + mount: {probe.stderr.decode().strip()}); run as root")
    return [*hide, *argv]


def _wait_login(url: str, log: Path, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as res:
                body = res.read().decode()
                assert res.status == 200 and 'name="password"' in body, body[:500]
                return
        except OSError:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=40)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _sweep(root: Path) -> None:
    # The demo job runs detached on the local cluster (as a job should), and a worker killed after its
    # grace period can leave pool children: stop every process of this clone and data dir.
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(root) in cmdline and int(entry.name) != os.getpid():
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _postgres_of(data: Path) -> bool:
    pid_file = data / "pg" / "postmaster.pid"
    if not pid_file.exists():
        return False
    return Path(f"/proc/{pid_file.read_text().split()[0]}").exists()


@pytest.fixture
def scratch() -> Iterator[Path]:
    # Not pytest's tmp_path: as root, pgserver runs Postgres as the user `pgserver`, which must reach
    # the data dir, and every pytest run on the machine resets its own base folder to mode 0700.
    path = Path(tempfile.mkdtemp(prefix="deeprepo-make-run-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_make_run_in_a_fresh_clone_then_manage_py_beside_it(scratch: Path) -> None:
    if shutil.which("uv") is None or shutil.which("make") is None:
        pytest.fail("uv and make are needed (pip install uv; apt-get install make)")
    tmp_path = scratch
    clone, data = tmp_path / "clone", tmp_path / "data"
    _clone(clone)
    committed = (clone / "pyproject.toml").read_text() + (clone / "uv.lock").read_text()
    assert "file://" not in committed and "/opt/" not in committed
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABASE_URL", "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "DJANGO_", "CELERY_",
                                "DEEPREPO_", "PYTEST"))}
    env.update(DEEPREPO_PORT=str(port), DEEPREPO_DATA_DIR=str(data))
    log = tmp_path / "make-run.log"
    proc = subprocess.Popen(_hiding_wheels(["make", "run"]), cwd=clone, env=env, start_new_session=True,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    try:
        _wait_login(f"http://127.0.0.1:{port}/login/", log, proc)
        deadline = time.monotonic() + 60  # the launcher prints once its own request was answered
        while "web app on" not in (text := log.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, text[-3000:]
            time.sleep(0.3)
        assert "database: postgresql://" in text, text
        # The login is printed once the web server answers, not while it is still starting.
        assert text.index("Listening at: http://") < text.index("login: "), text
        # A quiet first screen: no package list, no Celery banner or warnings meant for operators.
        for noise in (" + django==", "superuser privileges", "No hostname was supplied", "-------------- [queues]"):
            assert noise not in text, f"{noise!r} in the start-up log:\n{text}"
        assert not (clone / ".venv" / "lib" / "python3.11" / "site-packages" / "pytest").exists(), \
            "make run installed the test toolchain"

        # A second terminal: no DATABASE_URL, only the data directory make run uses.
        state = tmp_path / "trainer_state.json"
        state.write_text(json.dumps({"log_history": [{"step": 1, "loss": 0.5, "reward": 0.25},
                                                     {"step": 2, "loss": 0.4, "reward": 0.5}]}))
        imported = subprocess.run(["uv", "run", "python", "manage.py", "import", str(state), "--project", "demo"],
                                  cwd=clone, env={k: v for k, v in env.items() if k != "DEEPREPO_PORT"},
                                  capture_output=True, text=True, timeout=120)
        assert imported.returncode == 0, imported.stdout + imported.stderr
        assert "created run" in imported.stdout, imported.stdout + imported.stderr
        assert "database: postgresql://" in imported.stderr, imported.stderr
        assert _postgres_of(data), "manage.py stopped the server make run is using"
        run_id = imported.stdout.strip().rsplit(": ", 1)[1]
    finally:
        _stop(proc)
        postgres_left = _postgres_of(data)
        _sweep(tmp_path)
    assert not postgres_left, "make run left its Postgres running"
    # Ctrl-C stops everything once, in order: no cold shutdown, no Celery error or traceback.
    stopped = log.read_text().rsplit("Ctrl-C stops everything", 1)[-1]
    for noise in ("cold shutdown", "Traceback", "ERROR/", "[ERROR]", "CRITICAL"):
        assert noise not in stopped, f"{noise!r} while stopping:\n{stopped[-3000:]}"
    assert "[deeprepo]\x1b[0m stopped" in stopped or "stopped" in stopped, stopped[-2000:]

    # make run is down: manage.py starts the embedded server itself, and stops it when done.
    query = f"from deeprepo_web.runs.models import Run; print('found', Run.objects.filter(public_id='{run_id}').count())"
    try:
        found = subprocess.run(["uv", "run", "python", "manage.py", "shell", "-c", query],
                               cwd=clone, env=env, capture_output=True, text=True, timeout=120)
        assert found.returncode == 0, found.stdout + found.stderr
        assert "found 1" in found.stdout, found.stdout + found.stderr
        assert not _postgres_of(data), "manage.py left the Postgres it started running"
    finally:
        _sweep(tmp_path)
