"""An OpenSSH server on 127.0.0.1 acting as a cluster login node, with throwaway keys.

The host key and the user key are generated per session; the user's authorized key lives in
the temp dir (AuthorizedKeysFile), so concurrent sessions never edit a real ~/.ssh.
"""

from __future__ import annotations

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
    pid_alive,
    port_is_free,
    read_pid,
    require_binary,
    stop_pid,
)

DEFAULT_PORT = 2222
TEST_USER = "deeprepo-ci"


@dataclass
class SshServer:
    root: Path
    host: str
    port: int
    user: str
    user_key: str  # private key (OpenSSH PEM) of `user`
    host_public_key: str  # "ssh-ed25519 AAAA..."
    pid: int

    @property
    def known_hosts(self) -> str:
        """A known_hosts line for this server, in OpenSSH's "[host]:port" form."""
        return f"[{self.host}]:{self.port} {self.host_public_key}\n"

    def stop(self) -> None:
        stop_pid(self.pid)
        shutil.rmtree(self.root, ignore_errors=True)


def ensure_test_user(name: str = TEST_USER) -> pwd.struct_passwd:
    """Create (once) an ordinary user that can log in with a key but has no password."""
    require_binary("useradd")
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True, timeout=30)
    # useradd leaves the account locked ("!"), which sshd refuses even for key logins.
    subprocess.run(["usermod", "-p", "*", name], check=True, timeout=30)
    return pwd.getpwnam(name)


def _keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, timeout=30, stdin=subprocess.DEVNULL)


def start_sshd(port: int | None = None, user: str = TEST_USER) -> SshServer:
    sshd = require_binary("sshd")
    require_binary("ssh-keygen")
    if os.geteuid() != 0:
        raise ServiceUnavailable("sshd tests need root (to log in as a second user)")
    account = ensure_test_user(user)
    if port is None:
        # 2222 by convention; fall back to a free port when another session holds it.
        port = DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()

    root = Path(tempfile.mkdtemp(prefix="deeprepo-sshd-"))
    root.chmod(0o755)  # sshd reads AuthorizedKeysFile as the target user
    _keygen(root / "host_key", "deeprepo-test-host")
    _keygen(root / "user_key", "deeprepo-test-user")
    auth = root / "authorized_keys"
    shutil.copy(root / "user_key.pub", auth)
    auth.chmod(0o644)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
    conf = root / "sshd_config"
    conf.write_text(f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {root}/host_key
PidFile {root}/sshd.pid
AuthorizedKeysFile {auth}
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin no
UsePAM no
# The key file sits under /tmp (sticky, world-writable), which StrictModes rejects.
StrictModes no
AllowUsers {account.pw_name}
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
LogLevel VERBOSE
""")
    log = root / "sshd.log"
    # -D: stay in the foreground so the PID we hold is the listener; -e -E: log to a file.
    proc = subprocess.Popen([sshd, "-D", "-e", "-E", str(log), "-f", str(conf)],
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        read_pid(root / "sshd.pid", timeout=10)
        if proc.poll() is not None or not pid_alive(proc.pid):
            raise RuntimeError(f"sshd exited: {log.read_text() if log.exists() else ''}")
    except BaseException:
        stop_pid(proc.pid)
        shutil.rmtree(root, ignore_errors=True)
        raise
    return SshServer(
        root=root, host="127.0.0.1", port=port, user=account.pw_name,
        user_key=(root / "user_key").read_text(),
        host_public_key=" ".join((root / "host_key.pub").read_text().split()[:2]),
        pid=proc.pid,
    )
