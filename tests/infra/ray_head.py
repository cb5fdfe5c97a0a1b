"""A local Ray head (GCS + raylet + dashboard with the Job Submission API) on 127.0.0.1.

`ray start --block` runs in its own process group; stopping kills that group only (never
`ray stop`, which would kill every Ray on the machine, including other test sessions').
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.infra._proc import ServiceUnavailable, free_port, wait_until


@dataclass
class RayHead:
    root: Path
    address: str  # dashboard / Job Submission API base URL
    gcs_port: int
    pid: int  # `ray start --block`, leader of the process group holding every Ray daemon

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        end = time.monotonic() + 15
        while time.monotonic() < end:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, os.WNOHANG)
            try:
                os.killpg(self.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)
        # Idle workers live in their own process groups and die a moment after the raylet;
        # on the way out they may recreate session dirs. Sweep once more.
        time.sleep(1.0)
        shutil.rmtree(self.root, ignore_errors=True)


def _ray_cli() -> str:
    # The `ray` script installed next to this interpreter (uv's venv), not some other Ray.
    cli = Path(sys.executable).with_name("ray")
    if not cli.exists():
        raise ServiceUnavailable("ray CLI not installed (uv sync installs ray[default] in the dev group)")
    return str(cli)


def _api_up(address: str) -> bool:
    """The Job API answers and the head node registered (the dashboard answers before the raylet
    has; a raylet that does not register within Ray's 30 s makes `ray start` give up)."""
    try:
        with urllib.request.urlopen(f"{address}/api/v0/nodes?limit=10", timeout=5) as r:
            return r.status == 200 and b'"ALIVE"' in r.read()
    except OSError:
        return False


def start_ray_head(timeout: float = 180.0, attempts: int = 3) -> RayHead:
    """A head that is up; on a machine too busy for Ray's own startup deadline, try again."""
    for attempt in range(1, attempts + 1):
        try:
            return _start_ray_head(timeout)
        except RuntimeError as e:
            # Seen here: "The current node timed out during startup" (Ray's fixed 30 s), its log
            # cut short when the process is already gone. Any early exit is worth another try.
            if attempt == attempts or "ray start exited" not in str(e):
                raise
    raise AssertionError("unreachable")


def _start_ray_head(timeout: float) -> RayHead:
    # Minutes, not seconds: on a 2-core machine shared by several test sessions the dashboard
    # has been seen taking over 60 s to answer.
    cli = _ray_cli()
    root = Path(tempfile.mkdtemp(prefix="deeprepo-ray-"))
    gcs, dash = free_port(), free_port()
    env = {
        # The head's environment reaches every job; the test runner's own DEEPREPO_* settings must not.
        **{k: v for k, v in os.environ.items() if not k.startswith("DEEPREPO_")},
        # Without this Ray binds the machine's external interface.
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        # Ray re-launches workers with `uv run` when started under uv: slow and outside our group.
        "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    }
    argv = [
        cli, "start", "--head", "--block", "--disable-usage-stats",
        "--node-ip-address=127.0.0.1", "--dashboard-host=127.0.0.1",
        f"--port={gcs}", f"--dashboard-port={dash}",
        # Fixed defaults (10001, 8076, 52365 ...) would collide between concurrent sessions.
        f"--ray-client-server-port={free_port()}", f"--node-manager-port={free_port()}",
        f"--object-manager-port={free_port()}", f"--dashboard-agent-listen-port={free_port()}",
        f"--dashboard-agent-grpc-port={free_port()}", f"--metrics-export-port={free_port()}",
        f"--runtime-env-agent-port={free_port()}",
        "--num-cpus=2", "--num-gpus=0", f"--temp-dir={root}", "--include-dashboard=true",
    ]
    with open(root / "ray-start.log", "ab") as log:
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    head = RayHead(root=root, address=f"http://127.0.0.1:{dash}", gcs_port=gcs, pid=proc.pid)

    def ready() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"ray start exited: {(root / 'ray-start.log').read_text()[-3000:]}")
        return _api_up(head.address)

    try:
        wait_until(ready, timeout, "ray dashboard", interval=0.25)
    except BaseException:
        head.stop()
        raise
    return head
