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

from tests.infra._proc import (
    ServiceUnavailable,
    free_port,
    port_is_free,
    require_binary,
    stop_pid,
    wait_until,
)


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


def _as_postgres(argv: list[str]) -> list[str]:
    # initdb, pg_basebackup and pgbouncer refuse to run as root: the clusters belong to the postgres user.
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _own_dir(prefix: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        os.chown(root, pwd.getpwnam("postgres").pw_uid, -1)
    return root


def start_postgres() -> PostgresCluster:
    root = _own_dir("deeprepo-pg-")
    data = root / "data"
    argv = [_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    subprocess.run(_as_postgres(argv), check=True, capture_output=True, timeout=120)
    cluster = PostgresCluster(data=data, port=free_port())
    cluster.start()
    return cluster


def start_replica(primary: PostgresCluster) -> PostgresCluster:
    """A hot standby of `primary`, streaming from it: pg_basebackup (-R writes standby.signal and
    primary_conninfo), then its own server on its own port."""
    root = _own_dir("deeprepo-replica-")
    data = root / "data"
    argv = [_bin("pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres", "-D", str(data),
            "-R", "-X", "stream", "-c", "fast"]
    subprocess.run(_as_postgres(argv), check=True, capture_output=True, timeout=300)
    replica = PostgresCluster(data=data, port=free_port())
    replica.start()
    return replica


@dataclass
class PgBouncer:
    root: Path
    port: int
    proc: subprocess.Popen[bytes]

    def url(self, dbname: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{dbname}"

    def stop(self) -> None:
        stop_pid(self.proc.pid)
        self.proc.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)


def start_pgbouncer(primary: PostgresCluster, dbname: str) -> PgBouncer:
    """PgBouncer in transaction mode in front of `primary`'s `dbname` (and its admin console, `pgbouncer`)."""
    binary = require_binary("pgbouncer", "apt-get install pgbouncer")
    root = _own_dir("deeprepo-pgbouncer-")
    port = free_port()
    (root / "users.txt").write_text('"postgres" ""\n')
    (root / "pgbouncer.ini").write_text(f"""[databases]
{dbname} = host=127.0.0.1 port={primary.port} dbname={dbname}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {root}/users.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options
logfile = {root}/pgbouncer.log
""")
    if os.geteuid() == 0:
        for name in ("users.txt", "pgbouncer.ini"):
            shutil.chown(root / name, "postgres")
    proc = subprocess.Popen(_as_postgres([binary, str(root / "pgbouncer.ini")]), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: not port_is_free(port) or proc.poll() is not None, 20, "pgbouncer")
    except TimeoutError:
        stop_pid(proc.pid)
        raise
    if proc.poll() is not None:
        raise ServiceUnavailable(f"pgbouncer exited: {proc.stderr.read().decode()[-500:] if proc.stderr else ''}")
    return PgBouncer(root=root, port=port, proc=proc)
