"""Backend contract shared by every cluster kind.

A backend turns a validated JobSpec into an external id, and an external id back into a
JobStatus. It never touches the ORM, so Celery tasks own every database transition and the
backends can be tested against real clusters without a database.
"""

from __future__ import annotations

import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, TypeVar


class BackendError(Exception):
    """A cluster call failed.

    permanent=True: retrying cannot help (bad settings, rejected spec, wrong host key); the
    job fails with `message` shown to the user. permanent=False: try again later (network,
    timeouts, a daemon restarting).
    """

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent

    def __repr__(self) -> str:
        return f"BackendError({self.message!r}, permanent={self.permanent})"


class JobState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"  # the cluster forgot the job and left no exit status behind
    UNKNOWN = "unknown"  # the cluster answered something we cannot map; poll again

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.LOST})


@dataclass(frozen=True)
class JobStatus:
    state: JobState
    exit_code: int | None = None
    reason: str = ""
    # How often the cluster put the job back in its queue (Slurm requeue: preemption, node
    # failure, an admin's `scontrol requeue`); the same job id runs again, into the same run.
    restarts: int = 0
    # The job ended because of its node or the cluster, not because of the program: Slurm
    # NODE_FAIL, BOOT_FAIL, PREEMPTED (not requeued); a Ray job whose supervisor's node died.
    # The job service may submit such a job again (a template's "max retries on node failure");
    # JobState.LOST counts as one too (the cluster forgot the job and no exit code exists).
    node_failure: bool = False


# Values that end up in sbatch options, file names or HTTP ids. Conservative on purpose:
# nothing here may carry a shell metacharacter, a newline, a comma or '=' into an option.
_SAFE_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_TIME_LIMIT = re.compile(r"(\d{1,5})|(\d{1,3}-)?\d{1,2}(:\d{2}){0,2}")
_MEM = re.compile(r"\d{1,9}[KMGT]?")


def check_token(value: str, what: str) -> str:
    if not _SAFE_TOKEN.fullmatch(value):
        raise BackendError(
            f"{what} {value!r} is not allowed: use letters, digits, '_', '.', '-' (max 128)", permanent=True
        )
    return value


@dataclass(frozen=True)
class Resources:
    partition: str | None = None
    gpus: int = 0  # per node (Slurm --gres=gpu:N; Ray entrypoint_num_gpus; local CUDA_VISIBLE_DEVICES)
    nodes: int | None = None  # Slurm --nodes
    cpus: int | None = None
    mem: str | None = None  # Slurm syntax: "4096" (MB) or "16G"
    time_limit: str | None = None  # Slurm syntax: minutes, "HH:MM:SS", "D-HH:MM"
    account: str | None = None
    # Ray: custom entrypoint resources, e.g. {"accelerator_type:A100": 1}
    ray_resources: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.partition is not None:
            check_token(self.partition, "partition")
        if self.account is not None:
            check_token(self.account, "account")
        if not isinstance(self.gpus, int) or isinstance(self.gpus, bool) or not 0 <= self.gpus <= 64:
            raise BackendError(f"gpus must be an integer 0..64, got {self.gpus!r}", permanent=True)
        if self.nodes is not None and (
            not isinstance(self.nodes, int) or isinstance(self.nodes, bool) or not 1 <= self.nodes <= 1024
        ):
            raise BackendError(f"nodes must be an integer 1..1024, got {self.nodes!r}", permanent=True)
        if self.cpus is not None and (
            not isinstance(self.cpus, int) or isinstance(self.cpus, bool) or not 1 <= self.cpus <= 4096
        ):
            raise BackendError(f"cpus must be an integer 1..4096, got {self.cpus!r}", permanent=True)
        if self.mem is not None and not _MEM.fullmatch(self.mem):
            raise BackendError(f"mem {self.mem!r} must look like 4096, 512M or 16G", permanent=True)
        if self.time_limit is not None and not _TIME_LIMIT.fullmatch(self.time_limit):
            raise BackendError(
                f"time_limit {self.time_limit!r} must be minutes, HH:MM:SS or D-HH:MM:SS", permanent=True
            )
        for name, amount in self.ray_resources.items():
            if not re.fullmatch(r"[A-Za-z0-9_.:\-]{1,128}", name):
                raise BackendError(f"ray resource name {name!r} is not allowed", permanent=True)
            if not isinstance(amount, int | float) or amount < 0:
                raise BackendError(f"ray resource {name} must be a number >= 0", permanent=True)


@dataclass(frozen=True)
class JobSpec:
    """What to run. `command` is a shell command line the caller built with shlex.quote'd
    parameters (or give `argv` and it is joined with shlex). `env` values are passed as data,
    never spliced into a shell unquoted."""

    job_id: str
    command: str = ""
    argv: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    log_path: str | None = None
    name: str = "deeprepo-job"
    resources: Resources = field(default_factory=Resources)

    def __post_init__(self) -> None:
        check_token(self.job_id, "job_id")
        check_token(self.name, "job name")
        if self.argv is not None:
            if self.command:
                raise BackendError("give either command or argv, not both", permanent=True)
            if not self.argv:
                raise BackendError("argv is empty", permanent=True)
            object.__setattr__(self, "argv", tuple(self.argv))
        elif not self.command.strip():
            raise BackendError("command is empty", permanent=True)
        for key, value in self.env.items():
            if not _ENV_NAME.fullmatch(key):
                raise BackendError(f"environment variable name {key!r} is not allowed", permanent=True)
            if not isinstance(value, str) or "\x00" in value:
                raise BackendError(f"environment variable {key} must be a string without NUL", permanent=True)
        for what, path in (("workdir", self.workdir), ("log_path", self.log_path)):
            if path is not None and (not path or "\x00" in path or "\n" in path):
                raise BackendError(f"{what} {path!r} is not a usable path", permanent=True)
        if "\x00" in self.command:
            raise BackendError("command contains a NUL byte", permanent=True)

    @property
    def shell_command(self) -> str:
        """The command line for `sh -c`: as given, or argv quoted item by item."""
        return shlex.join(self.argv) if self.argv is not None else self.command


class Backend(ABC):
    kind: ClassVar[str]
    # What a Cluster of this kind holds: settings (shown on its form) and secrets (stored encrypted,
    # never shown again); settings that are numbers, with their type.
    setting_fields: ClassVar[tuple[str, ...]] = ()
    secret_fields: ClassVar[tuple[str, ...]] = ()
    number_settings: ClassVar[dict[str, type[int] | type[float]]] = {}

    def __init__(self, settings: Mapping[str, Any], secrets: Mapping[str, str]) -> None:
        self.settings = dict(settings)
        self.secrets = dict(secrets)

    @abstractmethod
    def submit(self, spec: JobSpec) -> str:
        """Start the job; return the cluster's id for it."""

    @abstractmethod
    def state(self, external_id: str) -> JobStatus: ...

    @abstractmethod
    def cancel(self, external_id: str) -> None:
        """Ask the cluster to stop the job; a job already finished is not an error."""

    @abstractmethod
    def logs(self, external_id: str, tail_bytes: int = 64_000) -> str:
        """The last `tail_bytes` of the job's combined stdout/stderr ('' if none yet)."""

    def find(self, spec: JobSpec) -> str | None:
        """The external id of a job already submitted for `spec.job_id`, or None.

        Dispatch calls this before submitting again after an interrupted attempt (a worker
        killed mid-submit), so a job is adopted rather than started twice."""
        return None

    def check_resources(self, resources: Resources) -> None:
        """Refuse (permanent BackendError, said plainly) what the cluster cannot give: a partition
        it does not have, more GPUs per node than any of its nodes holds. Dispatch asks this
        before it submits, so a job that could never start fails at once with the reason."""
        return None

    @abstractmethod
    def test_connection(self) -> str:
        """A one-line description of the cluster, or BackendError."""

    def check(self) -> None:
        """Refuse unusable settings (BackendError) without contacting the cluster; the constructor
        checks what it needs, this what it reads only later (keys, host key lines)."""
        return None

    def close(self) -> None:
        """Release connections (SSH, HTTP); the backend may be used again afterwards."""
        return None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def setting(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        value = self.settings.get(key, default)
        if required and value in (None, ""):
            raise BackendError(f"{self.kind} cluster setting {key!r} is required", permanent=True)
        return value


_REGISTRY: dict[str, type[Backend]] = {}
B = TypeVar("B", bound=type[Backend])


def register(kind: str) -> Callable[[B], B]:
    def wrap(cls: B) -> B:
        if kind in _REGISTRY and _REGISTRY[kind] is not cls:
            raise ValueError(f"backend kind {kind!r} registered twice")
        cls.kind = kind
        _REGISTRY[kind] = cls
        return cls

    return wrap


def registered_kinds() -> list[str]:
    return sorted(_REGISTRY)


def backend_class(kind: str) -> type[Backend]:
    # Built-in kinds register on import of the package; make sure that happened.
    import workers.backends  # noqa: F401

    try:
        return _REGISTRY[kind]
    except KeyError:
        raise BackendError(
            f"unknown cluster kind {kind!r} (known: {', '.join(registered_kinds())})", permanent=True
        ) from None


def backend_for(kind: str, settings: Mapping[str, Any], secrets: Mapping[str, str]) -> Backend:
    """Build the backend for a Cluster row's kind, settings and decrypted secrets."""
    return backend_class(kind)(settings, secrets)
