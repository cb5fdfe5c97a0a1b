"""Run an argv on the Slurm login node: locally (subprocess) or over SSH (paramiko).

Both take an argv list. Locally it is exec'd without a shell; over SSH the remote side always
has a shell, so the argv is joined with shlex (every item quoted) before it leaves. Every call
has a timeout, and failures become BackendError with the right permanence.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import paramiko

from workers.backends.base import BackendError


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Runner:
    def run(self, argv: Sequence[str], *, stdin: str | None = None, timeout: float = 30.0) -> Result:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        """Drop any connection; the runner reconnects on next use."""


# sbatch exports the submitting environment to the job by default; locally that would be
# the worker's environment (database URL, secret key). Only these reach sbatch. SLURM_CONF too:
# a worker started beside a cluster may have its Slurm client configured that way (the cluster's
# slurm_conf setting, when given, wins).
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "TZ", "SLURM_CONF")


class LocalRunner(Runner):
    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = dict(env or {})

    def describe(self) -> str:
        return f"this machine ({os.uname().nodename})"

    def run(self, argv: Sequence[str], *, stdin: str | None = None, timeout: float = 30.0) -> Result:
        try:
            cp = subprocess.run(
                list(argv), input=stdin, capture_output=True, text=True, timeout=timeout,
                env={**{k: os.environ[k] for k in _PASSED_ENV if k in os.environ}, **self.env},
                # Relative paths (state_dir, logs) mean the same as over SSH: relative to $HOME.
                cwd=os.path.expanduser("~"),
            )
        except FileNotFoundError as e:
            raise BackendError(f"{argv[0]} not found on this machine: is Slurm installed?", permanent=True) from e
        except subprocess.TimeoutExpired as e:
            raise BackendError(f"{argv[0]} did not answer within {timeout:.0f}s", permanent=False) from e
        return Result(cp.returncode, cp.stdout, cp.stderr)


def load_private_key(text: str, passphrase: str | None = None) -> paramiko.PKey:
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return cls.from_private_key(io.StringIO(text), password=passphrase or None)
        except (paramiko.SSHException, ValueError):
            continue
    raise BackendError("the SSH private key cannot be read (ed25519, ecdsa or rsa; passphrase?)", permanent=True)


def add_known_hosts(keys: paramiko.HostKeys, known_hosts: str) -> None:
    """Add OpenSSH known_hosts lines (plain or hashed host names) to `keys`."""
    for line in known_hosts.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            entry = paramiko.hostkeys.HostKeyEntry.from_line(line)
        except (paramiko.SSHException, ValueError) as e:
            raise BackendError(f"known_hosts line cannot be parsed: {line[:60]}... ({e})", permanent=True) from e
        if entry is None or entry.key is None:
            raise BackendError(f"known_hosts line cannot be parsed: {line[:60]}...", permanent=True)
        for host in entry.hostnames:
            keys.add(host, entry.key.get_name(), entry.key)


class SshRunner(Runner):
    """One SSH connection per backend instance, reopened when it drops."""

    def __init__(
        self, *, host: str, port: int, user: str, known_hosts: str, private_key: str,
        passphrase: str | None = None, connect_timeout: float = 10.0, env: Mapping[str, str] | None = None,
    ) -> None:
        if not known_hosts.strip():
            # Never trust on first use: a cluster row must carry the login node's host key.
            raise BackendError("known_hosts for the SSH login node is required", permanent=True)
        self.host, self.port, self.user = host, int(port), user
        self._known_hosts = known_hosts
        self._private_key = private_key
        self._passphrase = passphrase
        self.connect_timeout = connect_timeout
        self.env = dict(env or {})
        self._client: paramiko.SSHClient | None = None

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    def describe(self) -> str:
        return f"login node {self.target}"

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _connect(self) -> paramiko.SSHClient:
        if self._client is not None:
            transport = self._client.get_transport()
            if transport is not None and transport.is_active():
                return self._client
            self.close()
        client = paramiko.SSHClient()
        add_known_hosts(client.get_host_keys(), self._known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        pkey = load_private_key(self._private_key, self._passphrase)
        t = self.connect_timeout
        try:
            client.connect(
                self.host, port=self.port, username=self.user, pkey=pkey, timeout=t, banner_timeout=t,
                auth_timeout=t, channel_timeout=t, look_for_keys=False, allow_agent=False,
            )
        except paramiko.BadHostKeyException as e:
            client.close()
            raise BackendError(
                f"SSH host key of {self.host}:{self.port} does not match known_hosts "
                f"(server offered {e.key.get_name()} {e.key.fingerprint}); refusing to connect. "
                "If the login node was reinstalled, update the cluster's known_hosts.",
                permanent=True,
            ) from e
        except paramiko.AuthenticationException as e:
            client.close()
            raise BackendError(f"SSH login as {self.user} on {self.host}:{self.port} was refused: {e}",
                               permanent=True) from e
        except (OSError, EOFError) as e:  # refused, unreachable, DNS, timeouts (socket.timeout is OSError)
            client.close()
            raise BackendError(f"cannot reach SSH login node {self.host}:{self.port}: {e}", permanent=False) from e
        except paramiko.SSHException as e:
            client.close()
            if "known_hosts" in str(e):
                raise BackendError(
                    f"SSH host {self.host}:{self.port} is not in the cluster's known_hosts; refusing to connect",
                    permanent=True,
                ) from e
            raise BackendError(f"SSH handshake with {self.host}:{self.port} failed: {e}", permanent=False) from e
        self._client = client
        return client

    def run(self, argv: Sequence[str], *, stdin: str | None = None, timeout: float = 30.0) -> Result:
        env_prefix = ["env", *(f"{k}={v}" for k, v in self.env.items())] if self.env else []
        command = shlex.join([*env_prefix, *argv])
        client = self._connect()
        try:
            return self._exec(client, command, stdin, timeout)
        except (OSError, EOFError, paramiko.SSHException) as e:
            self.close()
            raise BackendError(f"SSH command {argv[0]} on {self.target} failed: {e}", permanent=False) from e

    def _exec(self, client: paramiko.SSHClient, command: str, stdin: str | None, timeout: float) -> Result:
        transport = client.get_transport()
        if transport is None:
            raise paramiko.SSHException("connection closed")
        chan = transport.open_session(timeout=timeout)
        try:
            chan.settimeout(timeout)
            chan.exec_command(command)
            if stdin is not None:
                chan.sendall(stdin.encode())
            chan.shutdown_write()
            out, err = bytearray(), bytearray()
            deadline = time.monotonic() + timeout
            # Drain both streams together: reading one to the end first can stall on the other.
            while True:
                busy = False
                if chan.recv_ready():
                    out += chan.recv(65536)
                    busy = True
                if chan.recv_stderr_ready():
                    err += chan.recv_stderr(65536)
                    busy = True
                if not busy and chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no result within {timeout:.0f}s")
                if not busy:
                    time.sleep(0.01)
            code = chan.recv_exit_status()
        finally:
            chan.close()
        return Result(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
