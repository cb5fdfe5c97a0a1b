"""Run jobs on the worker's own machine as detached process groups.

Each job gets a directory under `state_dir` holding meta.json (pid, its kernel start time,
log path), `exit_code` (written by a tiny shell wrapper when the command ends) and a
`cancelled` marker. State therefore survives a worker restart: it is read from files and
/proc, never from memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path

from workers.backends.base import (
    Backend,
    BackendError,
    JobSpec,
    JobState,
    JobStatus,
    Resources,
    check_token,
    register,
)

# $1 = the command line, $2 = the exit-code file. Both arrive as positional parameters, so
# nothing about them is ever re-parsed by this outer shell. The write is atomic (tmp + mv)
# so a reader never sees a half-written number.
_WRAPPER = 'sh -c "$1"; ec=$?; printf "%s\\n" "$ec" > "$2.tmp" && mv -f "$2.tmp" "$2"; exit "$ec"'

# Only these worker variables reach a job: the worker's own environment holds secrets
# (database URL, Django secret key) that a training program has no business seeing.
_INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "USER", "LOGNAME", "TZ", "TMPDIR")


def _proc_stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name; None once the process is gone or a
    zombie (exited, waiting to be reaped: as good as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields


def _proc_start_ticks(pid: int) -> int | None:
    """The process start time in clock ticks since boot, to tell a reused pid apart."""
    fields = _proc_stat(pid)
    return None if fields is None else int(fields[19])


def _group_alive(group: int) -> bool:
    """Whether any process of the process group is still running."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _proc_stat(entry.name)) is not None and int(fields[2]) == group:
            return True
    return False


def _group_wait(group: int, seconds: float) -> bool:
    """Wait up to `seconds` for the process group to be gone; whether it is."""
    deadline = time.monotonic() + seconds
    while _group_alive(group):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def tail_file(path: Path, tail_bytes: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - tail_bytes))
            return f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def machine_gpus() -> int:
    """NVIDIA GPUs the driver lists on this machine (0 without the driver)."""
    try:
        return sum(1 for _ in Path("/proc/driver/nvidia/gpus").iterdir())
    except OSError:
        return 0


def describe_exit(code: int) -> str:
    if code == 0:
        return "exited with code 0"
    if code > 128:
        return f"exited with code {code} (killed by signal {code - 128}?)"
    return f"exited with code {code}"


@register("local")
class LocalBackend(Backend):
    """Settings: state_dir (default ~/.deeprepo/local-jobs), kill_grace_s (default 5),
    inherit_env (extra worker variable names passed to jobs)."""

    setting_fields = ("state_dir", "kill_grace_s")
    number_settings = {"kill_grace_s": float}

    @property
    def state_dir(self) -> Path:
        return Path(self.setting("state_dir") or Path.home() / ".deeprepo" / "local-jobs").expanduser()

    def _job_dir(self, external_id: str) -> Path:
        # The id comes back from the database; refuse anything that could walk out of state_dir.
        return self.state_dir / check_token(external_id, "local job id")

    def submit(self, spec: JobSpec) -> str:
        external_id = f"{spec.job_id}-{secrets.token_hex(4)}"
        job_dir = self._job_dir(external_id)
        try:
            job_dir.mkdir(parents=True, mode=0o700)
        except OSError as e:
            raise BackendError(f"cannot create job directory {job_dir}: {e}", permanent=True) from e
        log_path = Path(spec.log_path).expanduser() if spec.log_path else job_dir / "output.log"
        if spec.workdir and not Path(spec.workdir).is_dir():
            raise BackendError(f"workdir {spec.workdir} does not exist on this machine", permanent=True)

        inherit = list(_INHERITED_ENV) + list(self.setting("inherit_env", []) or [])
        env = {k: os.environ[k] for k in inherit if k in os.environ}
        env.update(spec.env)
        if spec.resources.gpus:
            # The first N of this machine's GPUs; several local jobs at once share them.
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(spec.resources.gpus))
        try:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    ["/bin/sh", "-c", _WRAPPER, "deeprepo-job", spec.shell_command, str(job_dir / "exit_code")],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    cwd=spec.workdir or None, env=env,
                    # Own session = own process group: cancel can kill the whole tree, and the
                    # job does not die with the worker's terminal or its signals.
                    start_new_session=True, close_fds=True,
                )
        except OSError as e:
            raise BackendError(f"cannot start local job: {e}", permanent=True) from e
        # Reap the child when it ends so it does not linger as a zombie in a long-lived worker.
        threading.Thread(target=proc.wait, name=f"reap-{external_id}", daemon=True).start()
        meta = {"pid": proc.pid, "start_ticks": _proc_start_ticks(proc.pid), "log_path": str(log_path)}
        (job_dir / "meta.json").write_text(json.dumps(meta))
        return external_id

    def find(self, spec: JobSpec) -> str | None:
        # submit() names each job directory "<job_id>-<random>" before it starts the process.
        try:
            found = sorted(self.state_dir.glob(f"{check_token(spec.job_id, 'job_id')}-*"),
                           key=lambda p: p.stat().st_mtime)
        except OSError:
            return None
        return found[-1].name if found else None

    def _meta(self, external_id: str) -> dict[str, object] | None:
        try:
            data = json.loads((self._job_dir(external_id) / "meta.json").read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _alive(self, meta: dict[str, object]) -> bool:
        pid = meta.get("pid")
        if not isinstance(pid, int):
            return False
        ticks = _proc_start_ticks(pid)
        # Same pid but a different start time means the kernel reused the pid.
        return ticks is not None and (meta.get("start_ticks") in (None, ticks))

    def _finished(self, job_dir: Path) -> JobStatus | None:
        code = _read_int(job_dir / "exit_code")
        if code is None:
            return None
        if (job_dir / "cancelled").exists():
            return JobStatus(JobState.CANCELLED, code, "cancelled")
        if code == 0:
            return JobStatus(JobState.SUCCEEDED, 0, describe_exit(0))
        return JobStatus(JobState.FAILED, code, describe_exit(code))

    def state(self, external_id: str) -> JobStatus:
        job_dir = self._job_dir(external_id)
        meta = self._meta(external_id)
        if meta is None:
            return JobStatus(JobState.LOST, None, f"no record of job {external_id} in {self.state_dir}")
        done = self._finished(job_dir)
        if done is not None:
            return done
        if self._alive(meta):
            return JobStatus(JobState.RUNNING, None, f"pid {meta['pid']}")
        # The wrapper may have written its exit file between the two checks above.
        done = self._finished(job_dir)
        if done is not None:
            return done
        if (job_dir / "cancelled").exists():
            return JobStatus(JobState.CANCELLED, None, "cancelled")
        return JobStatus(
            JobState.LOST, None,
            f"process {meta['pid']} vanished without recording an exit code (killed outside or machine restarted)",
        )

    def cancel(self, external_id: str) -> None:
        job_dir = self._job_dir(external_id)
        meta = self._meta(external_id)
        if meta is None:
            raise BackendError(f"no record of job {external_id}", permanent=True)
        if self._finished(job_dir) is not None or not self._alive(meta):
            return
        # Marker first: whatever exit status follows, the job was cancelled on purpose.
        (job_dir / "cancelled").touch()
        group = int(str(meta["pid"]))  # the job's own session: its process group has the leader's pid
        grace = float(self.setting("kill_grace_s", 5))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
        # Wait for the whole group, not the leader alone: a child may outlive the shell, or ignore
        # SIGTERM (data loader workers do), and must not be left running on the machine.
        if not _group_wait(group, grace):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            _group_wait(group, 5)

    def logs(self, external_id: str, tail_bytes: int = 64_000) -> str:
        meta = self._meta(external_id)
        if meta is None:
            return ""
        return tail_file(Path(str(meta["log_path"])), tail_bytes)

    def check_resources(self, resources: Resources) -> None:
        if resources.gpus and resources.gpus > machine_gpus():
            raise BackendError(f"{resources.gpus} GPUs asked, but this machine has {machine_gpus()}",
                               permanent=True)

    def test_connection(self) -> str:
        d = self.state_dir
        try:
            d.mkdir(parents=True, exist_ok=True)
            probe = d / f".probe-{secrets.token_hex(4)}"
            probe.touch()
            probe.unlink()
        except OSError as e:
            raise BackendError(f"state_dir {d} is not writable: {e}", permanent=True) from e
        return f"local machine {os.uname().nodename}, {os.cpu_count()} CPUs, jobs under {d}"
