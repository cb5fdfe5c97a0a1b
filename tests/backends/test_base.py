from __future__ import annotations

import pytest

from workers.backends import BackendError, JobSpec, JobState, backend_for, registered_kinds


def test_registry_knows_every_builtin_kind() -> None:
    assert registered_kinds() == ["local", "ray", "slurm"]


def test_unknown_kind_is_permanent() -> None:
    with pytest.raises(BackendError) as e:
        backend_for("kubernetes", {}, {})
    assert e.value.permanent and "unknown cluster kind" in e.value.message


def test_argv_is_joined_with_shlex() -> None:
    spec = JobSpec(job_id="a1", argv=("python", "train.py", "--name", "x; rm -rf ~"))
    assert spec.shell_command == "python train.py --name 'x; rm -rf ~'"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"job_id": "../x", "command": "true"},
        {"job_id": "a b", "command": "true"},
        {"job_id": "ok", "command": "  "},
        {"job_id": "ok", "command": "true", "argv": ("true",)},
        {"job_id": "ok", "command": "true", "name": "x\n#SBATCH --uid=0"},
        {"job_id": "ok", "command": "true", "env": {"A=B": "x"}},
        {"job_id": "ok", "command": "true", "env": {"$(id)": "x"}},
        {"job_id": "ok", "command": "true", "env": {"A": "nul\x00byte"}},
        {"job_id": "ok", "command": "true", "workdir": "a\nb"},
    ],
)
def test_spec_rejects_unsafe_fields(kwargs: dict[str, object]) -> None:
    with pytest.raises(BackendError) as e:
        JobSpec(**kwargs)  # type: ignore[arg-type]
    assert e.value.permanent


def test_terminal_states() -> None:
    assert {s for s in JobState if s.is_terminal} == {
        JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST}
