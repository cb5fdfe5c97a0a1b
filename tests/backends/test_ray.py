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


class _BusyHead:
    """A reverse proxy in front of the real Ray head that answers the first `busy` job submissions
    the way a head whose job agent is not up answers (HTTP 500, Ray's own text), then forwards.

    Such a head cannot be produced on demand here (it happens on a fresh or overloaded head), so
    only that answer is staged; everything else, and the job itself, is the real Ray."""

    ANSWER = b"No available agent to submit job, please try again later."

    def __init__(self, head: RayHead, busy: int) -> None:
        import http.server
        import threading
        import urllib.request

        self.busy_left, self.refused = busy, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                if self.command == "POST" and self.path.rstrip("/") == "/api/jobs" and outer.busy_left > 0:
                    outer.busy_left -= 1
                    outer.refused += 1
                    self.send_response(500)
                    self.send_header("Content-Length", str(len(outer.ANSWER)))
                    self.end_headers()
                    self.wfile.write(outer.ANSWER)
                    return
                req = urllib.request.Request(head.address + self.path, data=body, method=self.command,
                                             headers={"Content-Type": self.headers.get("Content-Type", "")})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _forward

            def log_message(self, *args: object) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_busy_head_is_asked_again_with_backoff_not_failed(ray_head: RayHead, work: Path) -> None:
    busy = _BusyHead(ray_head, busy=3)
    try:
        with backend_for("ray", {"address": busy.address, "timeout": 10}, {}) as b:
            spec = JobSpec(job_id="busy1", command=probe_command(["x"]), env=probe_env(work / "o.json"),
                           workdir=str(work))
            jid = b.submit(spec)
            assert busy.refused == 3 and jid == "deeprepo-busy1"
            assert wait_state(b, jid, DONE, timeout=90).state is JobState.SUCCEEDED
    finally:
        busy.close()


def test_head_busy_past_the_submit_timeout_is_transient(ray_head: RayHead, work: Path) -> None:
    busy = _BusyHead(ray_head, busy=1000)
    try:
        with backend_for("ray", {"address": busy.address, "timeout": 5, "submit_timeout": 2}, {}) as b:
            spec = JobSpec(job_id="busy2", command="true", workdir=str(work))
            with pytest.raises(BackendError) as e:
                b.submit(spec)
        # Not a verdict on the job: dispatch retries it later (with its own backoff).
        assert not e.value.permanent and "No available agent" in e.value.message
        assert 2 <= busy.refused <= 4
    finally:
        busy.close()


def test_gpus_are_checked_against_the_nodes_of_the_cluster(ray_backend: Backend) -> None:
    ray_backend.check_resources(Resources(cpus=1))
    ray_backend.check_resources(Resources(ray_resources={"CPU": 1}))  # the head has 2
    for res, said in (
        (Resources(gpus=1), "1 GPUs asked, but no node of this Ray cluster has more than 0 (1 node(s) alive)"),
        (Resources(ray_resources={"accelerator_type:A100": 1}),
         "1 of resource 'accelerator_type:A100' asked, but no node of this Ray cluster has more than 0"),
        (Resources(nodes=2), "a Ray job's entrypoint runs on one node"),
    ):
        with pytest.raises(BackendError) as e:
            ray_backend.check_resources(res)
        assert e.value.permanent and e.value.message.startswith(said)


@pytest.mark.parametrize(("info", "node"), [
    # Ray's own job records (GET /api/jobs/<id>) as the head answers them: only a dead supervisor
    # (its node died) is the node's failure; the program's exit code, a bad entrypoint, a runtime
    # env that did not build are the job's own.
    ({"status": "FAILED", "error_type": "JOB_SUPERVISOR_ACTOR_DIED", "driver_exit_code": None,
      "message": "Job supervisor actor died: the node running it died"}, True),
    ({"status": "FAILED", "message": "Unexpected error occurred: The actor died because its node has died. "
                                     "Node Id: 3f2e"}, True),
    ({"status": "FAILED", "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR", "driver_exit_code": 3,
      "message": "Job entrypoint command failed with exit code 3"}, False),
    ({"status": "FAILED", "error_type": "RUNTIME_ENV_SETUP_FAILURE", "message": "pip failed"}, False),
    ({"status": "FAILED", "driver_exit_code": 137, "message": "node killed? exit code 137"}, False),
])
def test_a_dead_node_is_told_apart_from_the_programs_failure(info: dict[str, object], node: bool) -> None:
    from workers.backends.ray import ray_node_failure

    assert ray_node_failure(info) is node
