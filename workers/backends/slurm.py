"""Slurm through its command-line tools, on this machine or on a login node over SSH.

The batch script is sent to `sbatch` on stdin, so nothing is written to the cluster's disk by
us except the job's own log and exit-code files. Every user value reaches the script through
shlex.quote and every sbatch option is validated first (Resources / JobSpec).

State comes from `squeue --json`; once the job has left the queue, from `scontrol show job`
(until MinJobAge), then `sacct` (slurmdbd) or `sacct -c` (jobcomp file), then the exit-code
file the script writes itself. Nothing left -> lost.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import PurePosixPath
from typing import Any

import paramiko

from workers.backends.base import Backend, BackendError, JobSpec, JobState, JobStatus, Resources, register
from workers.backends.local import describe_exit
from workers.backends.runners import LocalRunner, Result, Runner, SshRunner, add_known_hosts, load_private_key

DEFAULT_STATE_DIR = ".deeprepo/slurm"

_PENDING = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "CONFIGURING", "POWER_UP_NODE"}
_RUNNING = {"RUNNING", "COMPLETING", "SUSPENDED", "STAGE_OUT", "SIGNALING", "STOPPED", "RESIZING"}
_FAILED = {"FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "TIMEOUT", "PREEMPTED", "SPECIAL_EXIT"}
# Final states the node or the cluster caused, not the program (a PREEMPTED job that Slurm
# requeues never reaches this state; it shows as REQUEUED/PENDING). TIMEOUT, DEADLINE and
# OUT_OF_MEMORY are the job's own limits: running it again would end the same way.
_NODE_FAILURE = {"NODE_FAIL": "its node failed", "BOOT_FAIL": "its node failed to boot",
                 "PREEMPTED": "preempted and not requeued"}

# Error texts of a controller that is down or slow: worth retrying, never a verdict on the job.
_TRANSIENT = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were transmitted"
    r"|Communication connection failure|Slurm backup controller in standby|try again|temporarily",
    re.IGNORECASE,
)
_INVALID_JOB = re.compile(r"Invalid job id", re.IGNORECASE)
_JOB_ID = re.compile(r"\d{1,12}(_\d{1,9})?")


def map_slurm_state(raw: str) -> JobState:
    # squeue may add flags ("CANCELLED by 0", "RUNNING+..."); the first word decides.
    word = _state_word(raw)
    if word in _PENDING:
        return JobState.PENDING
    if word in _RUNNING:
        return JobState.RUNNING
    if word == "COMPLETED":
        return JobState.SUCCEEDED
    if word == "CANCELLED":
        return JobState.CANCELLED
    if word in _FAILED:
        return JobState.FAILED
    return JobState.UNKNOWN


def _state_word(raw: str) -> str:
    return re.split(r"[\s+]", raw.strip().upper(), maxsplit=1)[0] if raw.strip() else ""


def _node_failure(raw: str, detail: str) -> JobStatus | None:
    """The status of a final state the node caused (the one test for it, whichever command said
    the state): no exit code of the program's own (Slurm reports the signal it killed the job
    with), the state and Slurm's reason shown. None for any other state."""
    word = _state_word(raw)
    what = _NODE_FAILURE.get(word)
    if what is None:
        return None
    extra = f", {detail}" if detail and detail not in ("None", word) else ""
    return JobStatus(JobState.FAILED, None, f"{word}: {what}{extra}", node_failure=True)


def _exit_from_pair(pair: str) -> int | None:
    """Slurm's "code:signal" -> one shell-style exit code (128+signal when killed)."""
    m = re.fullmatch(r"(\d+):(\d+)", pair.strip())
    if not m:
        return None
    code, sig = int(m.group(1)), int(m.group(2))
    return 128 + sig if sig and not code else code


def gres_gpus(gres: str) -> int:
    """GPUs in one node's GRES as sinfo prints it: "gpu:a100:4(S:0-1),shard:8" -> 4; "(null)" -> 0."""
    total = 0
    for item in gres.split(","):
        m = re.match(r"gpu(?::[^:(]+)?:(\d+)", item.strip())
        if m:
            total += int(m.group(1))
    return total


def _remote_path(path: str) -> str:
    """A path for the batch script: relative paths are anchored at $HOME, like over SSH."""
    if path.startswith("/"):
        return shlex.quote(path)
    return '"$HOME"/' + shlex.quote(path)


@register("slurm")
class SlurmBackend(Backend):
    """Settings: host/port/user/known_hosts (SSH; omit host to run locally), slurm_conf
    (exported as SLURM_CONF), state_dir (default ~/.deeprepo/slurm on the cluster),
    command_timeout (30 s), connect_timeout (10 s), bin_dir (where sbatch lives).
    Secrets: private_key, passphrase."""

    setting_fields = ("host", "port", "user", "known_hosts", "slurm_conf", "bin_dir", "state_dir",
                      "command_timeout", "connect_timeout")
    secret_fields = ("private_key", "passphrase")
    number_settings = {"port": int, "command_timeout": float, "connect_timeout": float}

    def __init__(self, settings: Any, secrets: Any) -> None:
        super().__init__(settings, secrets)
        env = {}
        if self.setting("slurm_conf"):
            env["SLURM_CONF"] = str(self.setting("slurm_conf"))
        self.timeout = float(self.setting("command_timeout", 30))
        self.state_dir = str(self.setting("state_dir") or DEFAULT_STATE_DIR).rstrip("/")
        if "\n" in self.state_dir or "\x00" in self.state_dir or not self.state_dir:
            raise BackendError("state_dir is not a usable path", permanent=True)
        self.runner: Runner
        if self.setting("host"):
            key = self.secrets.get("private_key")
            if not key:
                raise BackendError("an SSH private key is required for a Slurm login node", permanent=True)
            self.runner = SshRunner(
                host=str(self.setting("host")), port=int(self.setting("port", 22)),
                user=str(self.setting("user", required=True)), known_hosts=str(self.setting("known_hosts") or ""),
                private_key=key, passphrase=self.secrets.get("passphrase"),
                connect_timeout=float(self.setting("connect_timeout", 10)), env=env,
            )
        else:
            self.runner = LocalRunner(env=env)

    def close(self) -> None:
        self.runner.close()

    def check(self) -> None:
        if self.setting("host"):
            add_known_hosts(paramiko.HostKeys(), str(self.setting("known_hosts") or ""))
            load_private_key(self.secrets.get("private_key", ""), self.secrets.get("passphrase"))

    # -- helpers -------------------------------------------------------------------------
    def _bin(self, name: str) -> str:
        bin_dir = self.setting("bin_dir")
        return str(PurePosixPath(bin_dir) / name) if bin_dir else name

    def _run(self, *argv: str, stdin: str | None = None) -> Result:
        return self.runner.run([self._bin(argv[0]), *argv[1:]], stdin=stdin, timeout=self.timeout)

    def _check_id(self, external_id: str) -> str:
        if not _JOB_ID.fullmatch(external_id):
            raise BackendError(f"{external_id!r} is not a Slurm job id", permanent=True)
        return external_id

    def _file(self, external_id: str, suffix: str) -> str:
        return f"{self.state_dir}/{external_id}.{suffix}"

    def _fail(self, what: str, r: Result) -> BackendError:
        msg = (r.stderr or r.stdout).strip().splitlines()
        text = msg[-1] if msg else f"exit code {r.returncode}"
        return BackendError(f"{what} on {self.runner.describe()}: {text}", permanent=not _TRANSIENT.search(text))

    # -- submit ----------------------------------------------------------------------------
    def sbatch_options(self, spec: JobSpec, output: str) -> list[str]:
        res = spec.resources
        opts = ["--parsable", f"--job-name={spec.name}", f"--output={output}", "--open-mode=append"]
        if res.partition:
            opts.append(f"--partition={res.partition}")
        if res.account:
            opts.append(f"--account={res.account}")
        if res.nodes:
            opts.append(f"--nodes={res.nodes}")
        if res.gpus:
            opts.append(f"--gres=gpu:{res.gpus}")
        if res.cpus:
            opts.append(f"--cpus-per-task={res.cpus}")
        if res.mem:
            opts.append(f"--mem={res.mem}")
        if res.time_limit:
            opts.append(f"--time={res.time_limit}")
        return opts

    def batch_script(self, spec: JobSpec, log_path: str) -> str:
        lines = [
            "#!/bin/sh",
            f"# deeprepo-web job {spec.job_id}; every value below is shell-quoted.",
            f"state_dir={_remote_path(self.state_dir)}",
            'mkdir -p "$state_dir"',
            # Remember where the log went, for logs() after Slurm has forgotten the job.
            f'printf "%s\\n" {shlex.quote(log_path)} > "$state_dir/$SLURM_JOB_ID.logpath"',
        ]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in spec.env.items()]
        if spec.workdir:
            lines.append(f"cd {_remote_path(spec.workdir)} || exit 111")
        lines += [
            f"/bin/sh -c {shlex.quote(spec.shell_command)}",
            "ec=$?",
            'printf "%s\\n" "$ec" > "$state_dir/$SLURM_JOB_ID.exit.tmp" '
            '&& mv -f "$state_dir/$SLURM_JOB_ID.exit.tmp" "$state_dir/$SLURM_JOB_ID.exit"',
            'exit "$ec"',
        ]
        return "\n".join(lines) + "\n"

    def submit(self, spec: JobSpec) -> str:
        if spec.log_path:
            # sbatch expands %j, %u ... in --output; a literal path must escape its '%'.
            output = spec.log_path.replace("%", "%%")
        else:
            output = f"{self.state_dir}/%j.log"  # logs() knows this default from the job id
        # slurmd does not create the log's directory; a missing one fails the job silently.
        dirs = {self.state_dir, str(PurePosixPath(spec.log_path or output).parent)}
        r = self.runner.run(["mkdir", "-p", "--", *sorted(dirs)], timeout=self.timeout)
        if not r.ok:
            raise self._fail("cannot create the job's directories", r)
        script = self.batch_script(spec, spec.log_path or "")
        r = self._run("sbatch", *self.sbatch_options(spec, output), stdin=script)
        if not r.ok:
            raise self._fail("sbatch refused the job", r)
        job_id = r.stdout.strip().split(";", 1)[0]
        if not _JOB_ID.fullmatch(job_id):
            raise BackendError(f"sbatch answered {r.stdout.strip()!r}, not a job id", permanent=False)
        return job_id

    def find(self, spec: JobSpec) -> str | None:
        # Job names are unique per deeprepo job; --states=all includes jobs that already ended
        # (while the controller remembers them, MinJobAge).
        r = self._run("squeue", "-h", "--states=all", f"--name={spec.name}", "-o", "%i")
        if not r.ok:
            raise self._fail("squeue failed", r)
        ids = [line.strip() for line in r.stdout.splitlines() if _JOB_ID.fullmatch(line.strip())]
        return ids[-1] if ids else None

    # -- state -----------------------------------------------------------------------------
    def state(self, external_id: str) -> JobStatus:
        jid = self._check_id(external_id)
        for probe in (self._from_squeue, self._from_scontrol, self._from_sacct, self._from_files):
            status = probe(jid)
            if status is not None:
                return self._mark_cancel(jid, status)
        return JobStatus(JobState.LOST, None, "Slurm has no record of the job and it left no exit code")

    def _mark_cancel(self, jid: str, status: JobStatus) -> JobStatus:
        if status.state is JobState.CANCELLED and "cancelled" not in status.reason.lower():
            return JobStatus(status.state, status.exit_code, f"cancelled on the cluster ({status.reason})")
        return status

    def _from_squeue(self, jid: str) -> JobStatus | None:
        r = self._run("squeue", "--json", f"--jobs={jid}")
        if not r.ok:
            if _INVALID_JOB.search(r.stderr):
                return None
            raise self._fail("squeue failed", r)
        try:
            data = json.loads(r.stdout)
        except ValueError:
            # Older/newer Slurm without the JSON plugin: plain format works everywhere.
            return self._from_squeue_text(jid)
        # A controller that is down makes `squeue --json` exit 0 with an empty list and an
        # "errors" entry: that is no news about the job, never "not in the queue".
        errors = [e for e in data.get("errors") or [] if isinstance(e, dict)]
        if errors:
            text = "; ".join(f"{e.get('source', 'squeue')}: {e.get('description') or e.get('error')}" for e in errors)
            if _INVALID_JOB.search(text):
                return None
            raise BackendError(f"squeue on {self.runner.describe()} got no answer from the Slurm controller: "
                               f"{text}", permanent=False)
        jobs = data.get("jobs", [])
        # squeue --json ignores --jobs for unknown ids and lists everything: filter ourselves.
        for job in jobs:
            if str(job.get("job_id")) == jid:
                raw = job.get("job_state")
                raw = raw[0] if isinstance(raw, list) and raw else raw
                state = map_slurm_state(str(raw or ""))
                if state.is_terminal:
                    # JSON carries the raw wait status; scontrol has the clean "code:signal".
                    return (self._from_scontrol(jid) or _node_failure(str(raw or ""), "")
                            or JobStatus(state, None, str(raw)))
                restarts = job.get("restart_cnt")
                # Slurm says "None" when there is no reason (a running job): nothing to show.
                reason = str(job.get("state_reason") or "")
                return JobStatus(state, None, "" if reason == "None" else reason,
                                 restarts=restarts if isinstance(restarts, int) else 0)
        return None

    def _from_squeue_text(self, jid: str) -> JobStatus | None:
        r = self._run("squeue", "-h", f"--jobs={jid}", "-o", "%T|%r")
        if not r.ok:
            if _INVALID_JOB.search(r.stderr):
                return None
            raise self._fail("squeue failed", r)
        line = r.stdout.strip()
        if not line:
            return None
        raw, _, reason = line.partition("|")
        state = map_slurm_state(raw)
        if state.is_terminal:
            return self._from_scontrol(jid)
        return JobStatus(state, None, "" if reason == "None" else reason)

    def _from_scontrol(self, jid: str) -> JobStatus | None:
        r = self._run("scontrol", "show", "job", "-o", jid)
        if not r.ok or "JobState=" not in r.stdout:
            if r.ok or _INVALID_JOB.search(r.stderr):
                return None
            raise self._fail("scontrol failed", r)
        fields: dict[str, str] = {m.group(1): m.group(2) for m in re.finditer(r"(\w+)=(\S*)", r.stdout)}
        if failed := _node_failure(fields.get("JobState", ""), fields.get("Reason", "")):
            return failed
        state = map_slurm_state(fields.get("JobState", ""))
        code = _exit_from_pair(fields.get("ExitCode", "")) if state.is_terminal else None
        reason = fields.get("Reason", "")
        if state.is_terminal and code is not None and state is not JobState.CANCELLED:
            reason = describe_exit(code) + (f" ({reason})" if reason and reason != "None" else "")
        restarts = fields.get("Restarts", "0")
        return JobStatus(state, code, reason, restarts=int(restarts) if restarts.isdigit() else 0)

    def _from_sacct(self, jid: str) -> JobStatus | None:
        # With slurmdbd: plain sacct. Without it (22.05 test clusters): the jobcomp file (-c).
        for extra in ([], ["-c"]):
            r = self._run("sacct", *extra, "-X", "-n", "-P", "-o", "JobID,State,ExitCode", f"--jobs={jid}")
            if not r.ok:
                continue
            for line in r.stdout.splitlines():
                parts = line.strip().split("|")
                if len(parts) == 3 and parts[0] == jid:
                    if failed := _node_failure(parts[1], ""):
                        return failed
                    state = map_slurm_state(parts[1])
                    code = _exit_from_pair(parts[2])
                    reason = parts[1] if state is JobState.CANCELLED or code is None else describe_exit(code)
                    return JobStatus(state, code, reason)
        return None

    def _from_files(self, jid: str) -> JobStatus | None:
        r = self.runner.run(
            ["sh", "-c", 'cat -- "$1" 2>/dev/null; test -e "$2" && echo cancelled; exit 0', "sh",
             self._file(jid, "exit"), self._file(jid, "cancelled")],
            timeout=self.timeout,
        )
        words = r.stdout.split()
        if "cancelled" in words:
            return JobStatus(JobState.CANCELLED, None, "cancelled")
        if words and words[0].isdigit():
            code = int(words[0])
            return JobStatus(JobState.SUCCEEDED if code == 0 else JobState.FAILED, code, describe_exit(code))
        return None

    # -- cancel, logs, connection -------------------------------------------------------------
    def cancel(self, external_id: str) -> None:
        jid = self._check_id(external_id)
        # Marker first, so a job that left Slurm's memory still reads as cancelled by us.
        self.runner.run(["sh", "-c", 'mkdir -p "$1" && touch "$2"', "sh", self.state_dir,
                         self._file(jid, "cancelled")], timeout=self.timeout)
        r = self._run("scancel", jid)
        if not r.ok and not _INVALID_JOB.search(r.stderr) and "already completing" not in r.stderr:
            raise self._fail("scancel failed", r)

    def logs(self, external_id: str, tail_bytes: int = 64_000) -> str:
        jid = self._check_id(external_id)
        r = self.runner.run(
            ["sh", "-c",
             'p=$(cat -- "$1" 2>/dev/null); [ -n "$p" ] || p=$2; tail -c "$3" -- "$p" 2>/dev/null; exit 0',
             "sh", self._file(jid, "logpath"), self._file(jid, "log"), str(int(tail_bytes))],
            timeout=self.timeout,
        )
        return r.stdout

    def partitions(self) -> dict[str, tuple[int, int, bool]]:
        """What sinfo reports: partition -> (nodes, most GPUs on one node, is the default)."""
        r = self._run("sinfo", "-h", "-N", "-o", "%P|%N|%G")
        if not r.ok:
            raise self._fail("sinfo failed", r)
        nodes: dict[str, set[str]] = {}
        gpus: dict[str, int] = {}
        default = ""
        for line in r.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 3:
                continue
            name, node, gres = parts
            if name.endswith("*"):
                name = default = name[:-1]
            nodes.setdefault(name, set()).add(node)
            gpus[name] = max(gpus.get(name, 0), gres_gpus(gres))
        return {p: (len(n), gpus[p], p == default) for p, n in nodes.items()}

    def check_resources(self, resources: Resources) -> None:
        if not (resources.partition or resources.gpus or resources.nodes):
            return
        parts = self.partitions()
        name = resources.partition or next((p for p, (_, _, d) in parts.items() if d), "")
        if name not in parts:
            known = ", ".join(sorted(parts)) or "none"
            raise BackendError(f"partition {name!r} does not exist on this cluster (sinfo lists: {known})"
                               if resources.partition else f"no default partition; name one of: {known}",
                               permanent=True)
        count, most, _ = parts[name]
        if resources.gpus > most:
            raise BackendError(f"{resources.gpus} GPUs per node asked, but no node of partition {name!r} has "
                               f"more than {most} (sinfo GRES)", permanent=True)
        if resources.nodes and resources.nodes > count:
            raise BackendError(f"{resources.nodes} nodes asked, but partition {name!r} has {count}",
                               permanent=True)

    def test_connection(self) -> str:
        r = self._run("sinfo", "-h", "-o", "%P %a %D %T")
        if not r.ok:
            raise self._fail("sinfo failed", r)
        parts = "; ".join(line.strip() for line in r.stdout.splitlines() if line.strip())
        return f"Slurm on {self.runner.describe()}: {parts or 'no partitions'}"
