from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.backends.conftest import ssh_settings
from tests.backends.helpers import hostile_values, probe_command, probe_env, wait_file, wait_state
from tests.infra._proc import free_port
from tests.infra.slurm import SlurmCluster
from tests.infra.sshd import SshServer
from workers.backends import Backend, BackendError, JobSpec, JobState, backend_for

DONE = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}


def test_hostile_parameters_over_ssh_arrive_as_inert_data(slurm_ssh_backend: Backend, work: Path) -> None:
    canary, out = work / "pwned", work / "o.json"
    evil = hostile_values(canary)
    env = probe_env(out, extra={f"DEEPREPO_EVIL_{i}": v for i, v in enumerate(evil)})
    workdir = work / "w $(touch x) `touch x`"
    workdir.mkdir(mode=0o777)
    workdir.chmod(0o777)
    jid = slurm_ssh_backend.submit(JobSpec(job_id="s4", command=probe_command(evil), env=env, workdir=str(workdir)))
    assert wait_state(slurm_ssh_backend, jid, DONE).state is JobState.SUCCEEDED
    record = wait_file(out)
    assert record["argv"] == evil
    assert record["env"] == {k: v for k, v in env.items() if k.startswith("DEEPREPO_")}
    assert record["cwd"] == str(workdir)
    assert not canary.exists() and not (work / "x").exists()


def test_wrong_host_key_is_permanent(sshd_server: SshServer, slurm_cluster: SlurmCluster, work: Path) -> None:
    impostor = work / "impostor"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(impostor)], check=True)
    known = f"[127.0.0.1]:{sshd_server.port} " + " ".join((work / "impostor.pub").read_text().split()[:2])
    b = backend_for("slurm", ssh_settings(sshd_server, slurm_cluster, known_hosts=known),
                    {"private_key": sshd_server.user_key})
    with pytest.raises(BackendError) as e:
        b.test_connection()
    assert e.value.permanent
    assert "does not match known_hosts" in e.value.message and "ssh-ed25519" in e.value.message


def test_host_missing_from_known_hosts_is_permanent(sshd_server: SshServer, slurm_cluster: SlurmCluster) -> None:
    known = f"[10.0.0.1]:22 {sshd_server.host_public_key}\n"  # the right key, for another host
    b = backend_for("slurm", ssh_settings(sshd_server, slurm_cluster, known_hosts=known),
                    {"private_key": sshd_server.user_key})
    with pytest.raises(BackendError) as e:
        b.test_connection()
    assert e.value.permanent and "not in the cluster's known_hosts" in e.value.message


def test_known_hosts_is_required(sshd_server: SshServer, slurm_cluster: SlurmCluster) -> None:
    with pytest.raises(BackendError) as e:
        backend_for("slurm", ssh_settings(sshd_server, slurm_cluster, known_hosts=""),
                    {"private_key": sshd_server.user_key})
    assert e.value.permanent


def test_unreachable_login_node_is_transient(sshd_server: SshServer, slurm_cluster: SlurmCluster) -> None:
    closed = free_port()  # nothing listens there
    b = backend_for("slurm", ssh_settings(sshd_server, slurm_cluster, port=closed),
                    {"private_key": sshd_server.user_key})
    with pytest.raises(BackendError) as e:
        b.submit(JobSpec(job_id="u1", command="true"))
    assert not e.value.permanent
    assert f"cannot reach SSH login node 127.0.0.1:{closed}" in e.value.message


def test_wrong_user_key_is_permanent(sshd_server: SshServer, slurm_cluster: SlurmCluster, work: Path) -> None:
    other = work / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    b = backend_for("slurm", ssh_settings(sshd_server, slurm_cluster), {"private_key": other.read_text()})
    with pytest.raises(BackendError) as e:
        b.test_connection()
    assert e.value.permanent and "refused" in e.value.message
