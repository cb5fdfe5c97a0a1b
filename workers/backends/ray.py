"""Ray through the Job Submission REST API of the head's dashboard (httpx, no `ray` import).

The submission id is derived from our job id, so a dispatch retried after a lost HTTP answer
finds the job it already created instead of starting a second one.
"""

from __future__ import annotations

import random
import re
import shlex
import time
from collections.abc import Mapping
from typing import Any

import httpx

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
from workers.backends.local import describe_exit

_STATES = {
    "PENDING": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "SUCCEEDED": JobState.SUCCEEDED,
    "FAILED": JobState.FAILED,
    "STOPPED": JobState.CANCELLED,
}
_EXIT_IN_MESSAGE = re.compile(r"exit code (-?\d+)")
# The entrypoint runs beside its job supervisor actor: when that actor dies (its node died, or a
# raylet was killed) the job fails without an exit code of the program's own: a node failure.
_NODE_FAILURE_TYPES = {"JOB_SUPERVISOR_ACTOR_DIED"}
_NODE_FAILURE_MESSAGE = re.compile(r"job supervisor actor died|node .{0,80}(died|dead|was terminated)",
                                   re.IGNORECASE)
# A head whose job agent is not up yet (fresh head, or one under load) answers 500 with this.
_BUSY = re.compile(r"No available agent to submit job|try again later", re.IGNORECASE)
_BUSY_BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0, 0.0)


def ray_node_failure(info: Mapping[str, Any]) -> bool:
    """Did this failed Ray job die with its node (not by the program's own exit)?"""
    if info.get("driver_exit_code") is not None:
        return False
    if info.get("error_type"):
        return str(info["error_type"]) in _NODE_FAILURE_TYPES
    return bool(_NODE_FAILURE_MESSAGE.search(str(info.get("message") or "")))


@register("ray")
class RayBackend(Backend):
    """Settings: address (dashboard URL, e.g. http://head:8265), timeout (s, default 15),
    submit_timeout (s, default 60: the first job on a fresh head starts a supervisor actor).
    Secrets: token (sent as "Authorization: Bearer ..." for a proxy in front of the head)."""

    setting_fields = ("address", "timeout", "submit_timeout")
    secret_fields = ("token",)
    number_settings = {"timeout": float, "submit_timeout": float}

    def __init__(self, settings: Any, secrets: Any) -> None:
        super().__init__(settings, secrets)
        self.address = str(self.setting("address", required=True)).rstrip("/")
        if not re.match(r"https?://", self.address):
            raise BackendError(f"Ray address {self.address!r} must start with http:// or https://", permanent=True)
        headers = {"Authorization": f"Bearer {self.secrets['token']}"} if self.secrets.get("token") else {}
        self.timeout = float(self.setting("timeout", 15))
        self.submit_timeout = float(self.setting("submit_timeout", 60))
        self._http = httpx.Client(base_url=self.address, headers=headers, timeout=self.timeout)

    def close(self) -> None:
        self._http.close()

    def _request(self, method: str, path: str, *, timeout: float | None = None, **kw: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, timeout=timeout or self.timeout, **kw)
        except httpx.TimeoutException as e:
            raise BackendError(f"Ray head {self.address} did not answer in time ({e.__class__.__name__})",
                               permanent=False) from e
        except httpx.TransportError as e:
            raise BackendError(f"cannot reach Ray head {self.address}: {e}", permanent=False) from e

    def _error(self, what: str, r: httpx.Response) -> BackendError:
        text = r.text.strip().splitlines()
        detail = text[-1][:300] if text else r.reason_phrase
        # 5xx and 429: the head is busy or restarting; other 4xx: the request itself is wrong.
        transient = r.status_code >= 500 or r.status_code == 429
        return BackendError(f"{what}: HTTP {r.status_code} from Ray head: {detail}", permanent=not transient)

    @staticmethod
    def submission_id(spec: JobSpec) -> str:
        return f"deeprepo-{spec.job_id}"

    @staticmethod
    def split_env(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        """(runtime_env env_vars, variables to export in the entrypoint).

        Ray passes env_vars through os.path.expandvars (no escape exists), so a value holding
        '$' would be rewritten ("$HOME" -> "/root"). Those few go through the entrypoint's
        shell instead, shlex-quoted, where they stay literal."""
        plain = {k: v for k, v in env.items() if "$" not in v}
        dollar = {k: v for k, v in env.items() if "$" in v}
        return plain, dollar

    def entrypoint(self, spec: JobSpec) -> str:
        # Ray runs the entrypoint with a shell; the command is already a quoted command line.
        _, dollar = self.split_env(spec.env)
        parts = [f"export {k}={shlex.quote(v)}" for k, v in dollar.items()]
        if spec.workdir:
            parts.append(f"cd {shlex.quote(spec.workdir)}")
        return " && ".join([*parts, spec.shell_command])

    def submit(self, spec: JobSpec) -> str:
        sid = self.submission_id(spec)
        res = spec.resources
        body: dict[str, Any] = {
            "entrypoint": self.entrypoint(spec),
            "submission_id": sid,
            # Env values travel as JSON data into the job's environment, never through a shell.
            "runtime_env": {"env_vars": self.split_env(spec.env)[0]},
            "metadata": {"deeprepo_job_id": spec.job_id, "name": spec.name},
        }
        if res.cpus:
            body["entrypoint_num_cpus"] = res.cpus
        if res.gpus:
            body["entrypoint_num_gpus"] = res.gpus
        if res.ray_resources:
            body["entrypoint_resources"] = dict(res.ray_resources)
        deadline = time.monotonic() + self.submit_timeout
        for delay in _BUSY_BACKOFF:
            r = self._request("POST", "/api/jobs/", json=body, timeout=self.submit_timeout)
            if r.is_success:
                return str(r.json().get("submission_id") or sid)
            if "already exists" in r.text:
                # A retry after a lost answer (or a busy answer that was not): the job is ours.
                return sid
            if not _BUSY.search(r.text) or time.monotonic() + delay > deadline:
                break
            # The head says so itself: its job agent is starting or overloaded. Ask again shortly.
            time.sleep(delay * random.uniform(0.8, 1.2))
        raise self._error("Ray refused the job", r)

    def find(self, spec: JobSpec) -> str | None:
        sid = self.submission_id(spec)
        r = self._request("GET", f"/api/jobs/{sid}")
        if r.status_code == 404:
            return None
        if not r.is_success:
            raise self._error("cannot look the job up", r)
        return sid

    def state(self, external_id: str) -> JobStatus:
        sid = check_token(external_id, "Ray submission id")
        r = self._request("GET", f"/api/jobs/{sid}")
        if r.status_code == 404:
            return JobStatus(JobState.LOST, None, f"Ray head {self.address} has no job {sid} (head restarted?)")
        if not r.is_success:
            raise self._error("cannot read job state", r)
        info = r.json()
        raw = str(info.get("status", ""))
        state = _STATES.get(raw, JobState.UNKNOWN)
        message = str(info.get("message") or raw)
        code = info.get("driver_exit_code")
        if code is None and state is JobState.FAILED:
            m = _EXIT_IN_MESSAGE.search(message)
            code = int(m.group(1)) if m else None
        if state is JobState.SUCCEEDED and code is None:
            code = 0
        if not state.is_terminal:
            return JobStatus(state, None, message.splitlines()[0] if message else raw)
        if state is JobState.CANCELLED:
            return JobStatus(state, code, "cancelled (stopped on Ray)")
        reason = describe_exit(code) if isinstance(code, int) else message.splitlines()[0]
        if state is JobState.FAILED and info.get("error_type"):
            reason += f" [{info['error_type']}]"
        return JobStatus(state, code if isinstance(code, int) else None, reason,
                         node_failure=state is JobState.FAILED and ray_node_failure(info))

    def check_resources(self, resources: Resources) -> None:
        if resources.nodes and resources.nodes > 1:
            raise BackendError("a Ray job's entrypoint runs on one node: ask for GPUs, the program spreads "
                               "its own work over the cluster", permanent=True)
        wanted = {**({"GPU": float(resources.gpus)} if resources.gpus else {}), **resources.ray_resources}
        if not wanted:
            return
        r = self._request("GET", "/api/v0/nodes", params={"limit": 1000, "detail": "1"})
        if not r.is_success:
            raise self._error("cannot read the cluster's nodes", r)
        rows = ((r.json().get("data") or {}).get("result") or {}).get("result") or []
        alive = [n.get("resources_total") or {} for n in rows if n.get("state") == "ALIVE"]
        for name, amount in wanted.items():
            most = max((float(n.get(name, 0)) for n in alive), default=0.0)
            if amount > most:
                what = "GPUs" if name == "GPU" else f"of resource {name!r}"
                raise BackendError(f"{amount:g} {what} asked, but no node of this Ray cluster has more than "
                                   f"{most:g} ({len(alive)} node(s) alive)", permanent=True)

    def cancel(self, external_id: str) -> None:
        sid = check_token(external_id, "Ray submission id")
        r = self._request("POST", f"/api/jobs/{sid}/stop")
        if r.status_code == 404 or r.is_success:
            return
        raise self._error("Ray refused to stop the job", r)

    def logs(self, external_id: str, tail_bytes: int = 64_000) -> str:
        sid = check_token(external_id, "Ray submission id")
        r = self._request("GET", f"/api/jobs/{sid}/logs")
        if r.status_code == 404:
            return ""
        if not r.is_success:
            raise self._error("cannot read job logs", r)
        data = str(r.json().get("logs", "")).encode()
        return data[-tail_bytes:].decode("utf-8", "replace")

    def test_connection(self) -> str:
        r = self._request("GET", "/api/version")
        if not r.is_success:
            raise self._error("version check failed", r)
        v = r.json()
        return f"Ray {v.get('ray_version', '?')} at {self.address}"
