"""A throwaway Postgres cluster on 127.0.0.1 (its own port and data dir) that tests may stop and restart."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.infra._proc import ServiceUnavailable, free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise ServiceUnavailable(f"{name} not found (apt-get install postgresql)")
    return found[-1]


@dataclass
class PostgresCluster:
    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        argv = [_bin("pg_ctl"), "-D", str(self.data), *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} -c fsync=off"
        self._ctl("-o", opts, "-l", str(self.data / "log.txt"), "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "-w", "stop")

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.data.parent, ignore_errors=True)


def start_postgres() -> PostgresCluster:
    root = Path(tempfile.mkdtemp(prefix="deeprepo-pg-"))
    data = root / "data"
    argv = [_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    if os.geteuid() == 0:
        # initdb refuses to run as root: the cluster belongs to the postgres user.
        uid = pwd.getpwnam("postgres").pw_uid
        os.chown(root, uid, -1)
        argv = ["runuser", "-u", "postgres", "--", *argv]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    cluster = PostgresCluster(data=data, port=free_port())
    cluster.start()
    return cluster
