"""Small process helpers shared by the service starters."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path


class ServiceUnavailable(RuntimeError):
    """A service cannot start here (binary missing); fixtures turn this into a skip."""


def require_binary(name: str, hint: str = "run .ci/install-clusters.sh") -> str:
    path = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    if path is None:
        raise ServiceUnavailable(f"{name} not found ({hint})")
    return path


def free_port() -> int:
    # Binding port 0 on loopback lets the kernel pick; a tiny race remains, acceptable in tests.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def wait_until(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(interval)
    raise TimeoutError(f"{what} not ready after {timeout:.0f}s")


def read_pid(pid_file: Path, timeout: float = 10.0) -> int:
    """Daemons that fork write their PID late; wait for a non-empty file."""
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", timeout, f"pid file {pid_file}")
    return int(pid_file.read_text().strip())


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def stop_pid(pid: int, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Stop one process we started: SIGTERM, wait, then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
