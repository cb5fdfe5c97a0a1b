"""What every backend promises, run against each real one: a job runs and succeeds with its log,
a failing job says its exit code, a cancelled job ends cancelled, a connection check describes the
cluster. What only one backend does (process groups, SSH users, Ray's environment) is in its own file."""

from __future__ import annotations

import pwd
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.backends.helpers import probe_command, probe_env, wait_file, wait_state
from tests.infra.sshd import SshServer
from workers.backends import Backend, JobSpec, JobState, backend_for

DONE = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}


@dataclass
class Case:
    backend: Backend
    timeout: float  # Ray starts a supervisor per job: slower than the others
    described_by: str  # what test_connection's line contains
    runs_as: int  # the uid the job runs as


@pytest.fixture(params=["local", "slurm", "slurm_ssh", "ray"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    kind = request.param
    if kind == "local":
        yield Case(request.getfixturevalue("local_backend"), 30, "local machine", 0)
    elif kind == "slurm":
        yield Case(request.getfixturevalue("slurm_backend"), 30, "debug", 0)
    elif kind == "slurm_ssh":
        server: SshServer = request.getfixturevalue("sshd_server")
        yield Case(request.getfixturevalue("slurm_ssh_backend"), 30, f"{server.user}@127.0.0.1:{server.port}",
                   pwd.getpwnam(server.user).pw_uid)
    else:
        ray_head = request.getfixturevalue("ray_head")
        with backend_for("ray", {"address": ray_head.address, "timeout": 10}, {}) as b:
            yield Case(b, 60, "Ray ", 0)


def test_submit_runs_and_succeeds(case: Case, work: Path) -> None:
    b, out = case.backend, work / "o.json"
    jid = b.submit(JobSpec(job_id="ok1", command=probe_command(["a"]), env=probe_env(out, sleep=1)))
    assert wait_state(b, jid, {JobState.RUNNING}, timeout=case.timeout).state is JobState.RUNNING
    status = wait_state(b, jid, DONE, timeout=case.timeout)
    assert (status.state, status.exit_code) == (JobState.SUCCEEDED, 0)
    record = wait_file(out, timeout=case.timeout)
    assert record["argv"] == ["a"] and record["uid"] == case.runs_as
    logs = b.logs(jid)
    assert "probe started" in logs and "probe stderr line" in logs and "probe done" in logs


def test_failing_command_reports_exit_code_and_log_tail(case: Case, work: Path) -> None:
    b = case.backend
    jid = b.submit(JobSpec(job_id="f1", command=probe_command([]), env=probe_env(work / "o", exit_code=3)))
    status = wait_state(b, jid, DONE, timeout=case.timeout)
    assert (status.state, status.exit_code) == (JobState.FAILED, 3)
    assert "code 3" in status.reason
    tail = b.logs(jid, tail_bytes=200)
    assert "probe done" in tail and len(tail.encode()) <= 200
    assert "probe stderr line" in b.logs(jid)


def test_cancel(case: Case, work: Path) -> None:
    b, out = case.backend, work / "o.json"
    jid = b.submit(JobSpec(job_id="c1", command=probe_command([]), env=probe_env(out, sleep=120)))
    wait_file(out, timeout=case.timeout)
    b.cancel(jid)
    assert wait_state(b, jid, DONE, timeout=case.timeout).state is JobState.CANCELLED


def test_connection_check(case: Case) -> None:
    assert case.described_by in case.backend.test_connection()
