"""A throwaway redis-server on a free loopback port, without persistence (a restart loses
every queued message, like a broker whose disk is gone). Never the machine's own Redis."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.infra._proc import free_port, require_binary, stop_pid, wait_until


@dataclass
class RedisServer:
    port: int
    root: Path
    pid: int = 0
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        binary = require_binary("redis-server", "apt-get install redis-server")
        with open(self.root / "redis.log", "ab") as log:
            self._proc = subprocess.Popen(
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--daemonize", "no", "--dir", str(self.root)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        self.pid = self._proc.pid
        wait_until(self.ping, timeout, f"redis on port {self.port}")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1).ping())
        except Exception:  # noqa: BLE001
            return False

    def kill(self) -> None:
        """kill -9: a crash, not a shutdown; nothing is saved."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            stop_pid(self._proc.pid)
            self._proc.wait(timeout=10)


def start_redis() -> RedisServer:
    server = RedisServer(port=free_port(), root=Path(tempfile.mkdtemp(prefix="deeprepo-redis-")))
    server.start()
    return server
