from __future__ import annotations

import pwd
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends.helpers import shared_dir
from tests.infra.fixtures import slurm_cluster, sshd_server  # noqa: F401  (fixtures; ray_head is session-wide, in tests/conftest.py)
from tests.infra.slurm import SlurmCluster
from tests.infra.sshd import SshServer
from workers.backends import Backend, backend_for


@pytest.fixture
def work() -> Iterator[Path]:
    """A per-test directory writable by root and the SSH test user (outside root's 0700 tmp)."""
    base = shared_dir(Path(tempfile.mkdtemp(prefix="deeprepo-bt-")))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def local_backend(tmp_path: Path) -> Iterator[Backend]:
    with backend_for("local", {"state_dir": str(tmp_path / "jobs"), "kill_grace_s": 2}, {}) as b:
        yield b


@pytest.fixture
def slurm_backend(slurm_cluster: SlurmCluster, work: Path) -> Iterator[Backend]:  # noqa: F811
    settings = {"slurm_conf": str(slurm_cluster.conf), "state_dir": str(work / "state"), "command_timeout": 15}
    with backend_for("slurm", settings, {}) as b:
        yield b


def ssh_settings(server: SshServer, cluster: SlurmCluster, **over: object) -> dict[str, object]:
    settings: dict[str, object] = {
        "host": server.host, "port": server.port, "user": server.user, "known_hosts": server.known_hosts,
        "slurm_conf": str(cluster.conf), "connect_timeout": 5, "command_timeout": 15,
        # Relative on purpose: exercises the "$HOME"-anchored paths on the login node.
        "state_dir": f".deeprepo/test-{secrets.token_hex(4)}",
    }
    settings.update(over)
    return settings


@pytest.fixture
def slurm_ssh_backend(slurm_cluster: SlurmCluster, sshd_server: SshServer) -> Iterator[Backend]:  # noqa: F811
    settings = ssh_settings(sshd_server, slurm_cluster)
    with backend_for("slurm", settings, {"private_key": sshd_server.user_key}) as b:
        yield b
    # The relative state_dir lives in the test user's home on the "login node" (this machine).
    shutil.rmtree(Path(pwd.getpwnam(sshd_server.user).pw_dir) / str(settings["state_dir"]), ignore_errors=True)
