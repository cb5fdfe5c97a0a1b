"""A throwaway single-node Slurm (munged + slurmctld + slurmd) on 127.0.0.1.

Everything lives in one temp dir (config, state, spool, logs, munge key and socket), the
daemons run in the foreground so the PIDs we hold are the daemons themselves, and the
ports are picked free so two test sessions on one machine do not collide.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.infra._proc import ServiceUnavailable, free_port, pid_alive, require_binary, stop_pid, wait_until

PARTITION = "debug"


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    munge_socket: Path
    pids: list[int] = field(default_factory=list)
    ctld_pid: int = 0

    def stop_controller(self, *, crash: bool = False) -> None:
        """Stop slurmctld only; slurmd keeps running its jobs. SIGTERM saves the controller's
        state first (an admin stop); crash=True is SIGKILL, which can lose allocations made in
        the last seconds (Slurm then runs such a job again after the restart)."""
        if self.ctld_pid:
            stop_pid(self.ctld_pid, sig=signal.SIGKILL if crash else signal.SIGTERM)
            wait_gone(self.ctld_pid)
            self.pids.remove(self.ctld_pid)
            self.ctld_pid = 0

    def start_controller(self, timeout: float = 30.0) -> None:
        """Start slurmctld again on the same port and state directory; wait until it answers."""
        if self.ctld_pid:
            return
        ctld = _spawn([require_binary("slurmctld"), "-D", "-i", "-f", str(self.conf)], self.env(),
                      self.root / "slurmctld.out")
        self.ctld_pid = ctld.pid
        self.pids.insert(1, ctld.pid)  # stop() goes in reverse: slurmd, slurmctld, munged

        def answers() -> bool:
            if ctld.poll() is not None:
                raise RuntimeError(f"slurmctld exited on restart; see {self.root}/slurmctld.log")
            return self.run("sinfo", "-h", "-o", "%T", timeout=5).returncode == 0

        wait_until(answers, timeout, "slurmctld back", interval=0.2)

    def env(self) -> dict[str, str]:
        """Environment for running Slurm client commands against this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, timeout=timeout)

    def stop(self) -> None:
        # Every job on this cluster belongs to the tests: cancel them so no slurmstepd outlives us.
        with contextlib.suppress(Exception):
            self.run("scancel", f"--partition={PARTITION}", timeout=5)
        for pid in reversed(self.pids):
            stop_pid(pid)
        self.pids.clear()
        shutil.rmtree(self.root, ignore_errors=True)


def _slurm_conf(root: Path, sock: Path, ctld_port: int, slurmd_port: int) -> str:
    cpus = max(2, os.cpu_count() or 2)
    return f"""\
ClusterName=deeprepotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
# Bind the daemons to the address the hostname resolves to (checked to be loopback in
# start_slurm) instead of INADDR_ANY.
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# No slurmdbd: sacct only works with -c against this jobcomp file.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.txt
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=300
KillWait=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _require_loopback_hostname() -> None:
    # With No*InAddrAny Slurm binds to whatever gethostname() resolves to; refuse to start a
    # test cluster that would listen on an external interface.
    host = socket.gethostname()
    try:
        addrs = {info[4][0] for info in socket.getaddrinfo(host, None, socket.AF_INET)}
    except socket.gaierror as e:
        raise ServiceUnavailable(f"hostname {host!r} does not resolve; Slurm needs it to map to 127.0.0.1") from e
    if not all(ipaddress.ip_address(a).is_loopback for a in addrs):
        raise ServiceUnavailable(
            f"hostname {host!r} resolves to {sorted(addrs)}: slurmctld would bind there; "
            "map it to 127.0.0.1 in /etc/hosts for tests"
        )


def _start_munged(root: Path) -> tuple[int, Path]:
    munged = require_binary("munged")
    munge = pwd.getpwnam("munge")
    mdir = root / "munge"
    mdir.mkdir(mode=0o700)
    key = mdir / "munge.key"
    key.write_bytes(secrets.token_bytes(128))
    key.chmod(0o400)
    # The socket dir must be traversable by job users (0711) but not listable or writable.
    sock_dir = root / "munge-sock"
    sock_dir.mkdir()
    sock_dir.chmod(0o711)
    for p in (mdir, key, sock_dir):
        os.chown(p, munge.pw_uid, munge.pw_gid)
    sock = sock_dir / "munge.sock"
    log = open(mdir / "munged.out", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [munged, "-F", f"--socket={sock}", f"--key-file={key}", f"--pid-file={mdir}/munged.pid",
         f"--log-file={mdir}/munged.log", f"--seed-file={mdir}/munged.seed", "--num-threads=2"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        user=munge.pw_uid, group=munge.pw_gid, extra_groups=[], start_new_session=True,
    )
    log.close()
    try:
        wait_until(lambda: sock.exists() or proc.poll() is not None, 10, "munged socket")
    except TimeoutError:
        stop_pid(proc.pid)
        raise
    if proc.poll() is not None:
        raise RuntimeError(f"munged exited: {(mdir / 'munged.out').read_text()}")
    return proc.pid, sock


def _spawn(argv: list[str], env: dict[str, str], out: Path) -> subprocess.Popen[bytes]:
    with open(out, "ab") as log:
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def start_slurm(timeout: float = 30.0) -> SlurmCluster:
    """Start munged, slurmctld and slurmd; return once the node is idle."""
    slurmctld = require_binary("slurmctld")
    slurmd = require_binary("slurmd")
    require_binary("sbatch")
    require_binary("munged")
    try:
        pwd.getpwnam("munge")
    except KeyError as e:
        raise ServiceUnavailable("user munge missing (run .ci/install-clusters.sh)") from e

    _require_loopback_hostname()
    root = Path(tempfile.mkdtemp(prefix="deeprepo-slurm-"))
    # Job users (the SSH test user) must read slurm.conf and reach the munge socket.
    root.chmod(0o755)
    for d in ("state", "spool"):
        (root / d).mkdir()
    cluster = SlurmCluster(root=root, conf=root / "slurm.conf", munge_socket=root / "munge-sock" / "munge.sock")
    try:
        munged_pid, sock = _start_munged(root)
        cluster.pids.append(munged_pid)
        cluster.conf.write_text(_slurm_conf(root, sock, free_port(), free_port()))
        cluster.conf.chmod(0o644)
        env = cluster.env()
        ctld = _spawn([slurmctld, "-D", "-i", "-f", str(cluster.conf)], env, root / "slurmctld.out")
        cluster.pids.append(ctld.pid)
        cluster.ctld_pid = ctld.pid
        node = _spawn([slurmd, "-D", "-N", "localhost", "-f", str(cluster.conf)], env, root / "slurmd.out")
        cluster.pids.append(node.pid)

        def idle() -> bool:
            for p in (ctld, node):
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited early; see {root}/*.log")
            r = cluster.run("sinfo", "-h", "-o", "%T", timeout=5)
            return r.returncode == 0 and r.stdout.strip() == "idle"

        wait_until(idle, timeout, "slurm node idle", interval=0.2)
    except BaseException:
        logs = ""
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out", "munge/munged.log"):
            with contextlib.suppress(OSError):
                logs += f"--- {name}\n" + (root / name).read_text()[-2000:]
        cluster.stop()
        if logs:
            print(logs)
        raise
    return cluster


def wait_gone(pid: int, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
