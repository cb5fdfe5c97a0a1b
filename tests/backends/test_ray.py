from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends.helpers import hostile_values, probe_command, probe_env, wait_file, wait_state
from tests.infra._proc import free_port
from tests.infra.ray_head import RayHead
from workers.backends import Backend, BackendError, JobSpec, JobState, Resources, backend_for

DONE = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}


@pytest.fixture
def ray_backend(ray_head: RayHead) -> Iterator[Backend]:
    with backend_for("ray", {"address": ray_head.address, "timeout": 10}, {}) as b:
        yield b


def test_submit_runs_and_succeeds_with_env(ray_backend: Backend, work: Path) -> None:
    canary, out = work / "pwned", work / "o.json"
    evil = hostile_values(canary)
    env = probe_env(out, sleep=1, extra={f"DEEPREPO_EVIL_{i}": v for i, v in enumerate(evil)})
    spec = JobSpec(job_id="r1", command=probe_command(evil), env=env, workdir=str(work),
                   resources=Resources(cpus=1))
    jid = ray_backend.submit(spec)
    wait_state(ray_backend, jid, {JobState.RUNNING}, timeout=60)
    status = wait_state(ray_backend, jid, DONE, timeout=60)
    assert (status.state, status.exit_code) == (JobState.SUCCEEDED, 0)
    record = wait_file(out)
    assert record["argv"] == evil
    assert record["env"] == {k: v for k, v in env.items() if k.startswith("DEEPREPO_")}
    assert record["cwd"] == str(work)
    assert not canary.exists()
    assert "probe done" in ray_backend.logs(jid)
    # A retried dispatch finds the same job instead of starting a second one.
    assert ray_backend.submit(spec) == jid


def test_unknown_job_is_lost(ray_backend: Backend) -> None:
    assert ray_backend.state("deeprepo-never-submitted").state is JobState.LOST


def test_unreachable_head_is_transient() -> None:
    port = free_port()
    b = backend_for("ray", {"address": f"http://127.0.0.1:{port}", "timeout": 3}, {})
    with pytest.raises(BackendError) as e:
        b.state("deeprepo-x")
    assert not e.value.permanent
    assert f"cannot reach Ray head http://127.0.0.1:{port}" in e.value.message


def test_bad_address_is_permanent() -> None:
    with pytest.raises(BackendError) as e:
        backend_for("ray", {"address": "127.0.0.1:8265"}, {})
    assert e.value.permanent
