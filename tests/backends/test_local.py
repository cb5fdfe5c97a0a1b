from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.backends.helpers import hostile_values, probe_command, probe_env, wait_file, wait_state
from tests.infra._proc import pid_alive
from tests.jobs.conftest import wait_for
from workers.backends import Backend, BackendError, JobSpec, JobState, backend_for

DONE = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}


def test_cancel_kills_a_child_that_ignores_sigterm(local_backend: Backend, work: Path) -> None:
    # The job's shell dies on SIGTERM at once; its child ignores it. Cancel must not stop at the
    # shell: whatever is left in the job's process group after the grace period gets SIGKILL.
    pidfile = work / "child.pid"
    script = f"(trap '' TERM; exec sleep 60) & echo $! > {pidfile}; wait"
    jid = local_backend.submit(JobSpec(job_id="c2", command=script))
    child = int(wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), what="child pid"))
    local_backend.cancel(jid)
    assert not pid_alive(child)
    assert wait_state(local_backend, jid, DONE, timeout=10).state is JobState.CANCELLED


def test_cancel_kills_the_process_group(local_backend: Backend, work: Path) -> None:
    out = work / "o.json"
    jid = local_backend.submit(JobSpec(job_id="c1", command=probe_command([]), env=probe_env(out, sleep=60)))
    pid = wait_file(out)["pid"]
    local_backend.cancel(jid)
    assert wait_state(local_backend, jid, DONE, timeout=10).state is JobState.CANCELLED
    assert not pid_alive(pid)
    local_backend.cancel(jid)  # cancelling a finished job is not an error


def test_process_killed_outside_is_lost(local_backend: Backend, work: Path) -> None:
    out = work / "o.json"
    jid = local_backend.submit(JobSpec(job_id="k1", command=probe_command([]), env=probe_env(out, sleep=60)))
    wait_file(out)
    os.killpg(os.getpgid(wait_file(out)["pid"]), signal.SIGKILL)  # the whole job, wrapper included
    status = wait_state(local_backend, jid, DONE, timeout=10)
    assert status.state is JobState.LOST and "vanished" in status.reason


def test_program_killed_by_signal_is_a_failure(local_backend: Backend, work: Path) -> None:
    out = work / "o.json"
    jid = local_backend.submit(JobSpec(job_id="k2", command=probe_command([]), env=probe_env(out, sleep=60)))
    os.kill(wait_file(out)["pid"], signal.SIGKILL)  # only the program; the wrapper records it
    status = wait_state(local_backend, jid, DONE, timeout=10)
    assert (status.state, status.exit_code) == (JobState.FAILED, 128 + signal.SIGKILL)


def test_state_survives_a_worker_restart(local_backend: Backend, work: Path, tmp_path: Path) -> None:
    out = work / "o.json"
    jid = local_backend.submit(JobSpec(job_id="r1", command=probe_command([]), env=probe_env(out, exit_code=5)))
    fresh = backend_for("local", {"state_dir": str(tmp_path / "jobs")}, {})
    status = wait_state(fresh, jid, DONE)
    assert (status.state, status.exit_code) == (JobState.FAILED, 5)


def test_hostile_parameters_arrive_as_inert_data(local_backend: Backend, work: Path) -> None:
    canary, out = work / "pwned", work / "o.json"
    evil = hostile_values(canary)
    env = probe_env(out, extra={f"DEEPREPO_EVIL_{i}": v for i, v in enumerate(evil)})
    env["DEEPREPO_RUN_ID"] = f"$(touch {canary})"
    workdir = work / "dir with space; $(touch x)"
    workdir.mkdir()
    jid = local_backend.submit(JobSpec(job_id="evil1", command=probe_command(evil), env=env, workdir=str(workdir)))
    assert wait_state(local_backend, jid, DONE).state is JobState.SUCCEEDED
    record = wait_file(out)
    assert record["argv"] == evil
    assert record["env"] == {k: v for k, v in env.items() if k.startswith("DEEPREPO_")}
    assert record["cwd"] == str(workdir)
    assert not canary.exists()


def test_job_does_not_inherit_worker_secrets(local_backend: Backend, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPREPO_WORKER_ONLY_SECRET", "s3cret")
    out = work / "o.json"
    jid = local_backend.submit(JobSpec(job_id="s1", command=probe_command([]), env=probe_env(out)))
    wait_state(local_backend, jid, DONE)
    assert "DEEPREPO_WORKER_ONLY_SECRET" not in wait_file(out)["env"]


def test_unknown_job_is_lost_and_bad_ids_are_refused(local_backend: Backend) -> None:
    assert local_backend.state("nope-1234").state is JobState.LOST
    with pytest.raises(BackendError) as e:
        local_backend.state("../../etc")
    assert e.value.permanent


def test_missing_workdir_is_permanent(local_backend: Backend, work: Path) -> None:
    with pytest.raises(BackendError) as e:
        local_backend.submit(JobSpec(job_id="w1", command="true", workdir=str(work / "absent")))
    assert e.value.permanent and "does not exist" in e.value.message


def test_gpus_set_cuda_visible_devices_and_are_checked_against_the_machine(local_backend: Backend,
                                                                           work: Path) -> None:
    from workers.backends import Resources
    from workers.backends.local import machine_gpus

    out = work / "cvd"
    spec = JobSpec(job_id="gpu1", command=f'printf "%s" "${{CUDA_VISIBLE_DEVICES-unset}}" > {out}',
                   resources=Resources(gpus=2))
    jid = local_backend.submit(spec)
    wait_state(local_backend, jid, {JobState.SUCCEEDED}, timeout=30)
    assert out.read_text() == "0,1"
    jid = local_backend.submit(JobSpec(job_id="gpu0", command=f'printf "%s" "${{CUDA_VISIBLE_DEVICES-unset}}" > {out}'))
    wait_state(local_backend, jid, {JobState.SUCCEEDED}, timeout=30)
    assert out.read_text() == "unset"
    have = machine_gpus()
    local_backend.check_resources(Resources(gpus=have))
    with pytest.raises(BackendError) as e:
        local_backend.check_resources(Resources(gpus=have + 1))
    assert e.value.permanent and e.value.message == f"{have + 1} GPUs asked, but this machine has {have}"
