"""Faults, with the real `mlflow` client where it is the one that meets them: a wrong or revoked key
(a clear error, nothing made), our server stopped and started under a running client (it retries;
every point stored once), malformed bodies, batches over MLflow's limits, another project's run id
(404, nothing revealed or stored)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.accounts.services import api_key_revoke
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.mlflow_server.models import Experiment
from deeprepo_web.runs.models import Metric, MetricSeries, Run
from tests.gunicorn import free_port, gunicorn
from tests.mlflow_server.test_tracking import mlflow_env, write

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(400)]

SLOW = Path(__file__).with_name("slow_writer.py")


def _call(url: str, key: str | None, method: str, endpoint: str, **kw: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.request(method, f"{url}/api/2.0/mlflow/{endpoint}", headers=headers, timeout=30, **kw)


@pytest.mark.parametrize("which", ["wrong", "revoked", "none"])
def test_a_bad_key_is_refused_clearly_and_makes_nothing(live_server: Any, team: Any, which: str) -> None:
    key = {"wrong": "drk_00000000_" + "x" * 43, "revoked": team.key, "none": None}[which]
    if which == "revoked":
        api_key_revoke(key=ApiKey.objects.get(project=team.project, name="test"))
    done = write(mlflow_env(live_server.url, key))
    assert done.returncode != 0
    assert "UNAUTHENTICATED" in done.stderr and "revoked API key" in done.stderr, done.stderr[-2000:]
    assert not Run.objects.exists() and not Experiment.objects.exists()


def test_another_projects_run_is_absent(live_server: Any, team: Any) -> None:
    url = live_server.url
    exp = _call(url, team.key, "POST", "experiments/create", json={"name": "mine"}).json()["experiment_id"]
    run_id = _call(url, team.key, "POST", "runs/create", json={"experiment_id": exp}).json()["run"]["info"]["run_id"]
    for method, endpoint, kw in [
        ("GET", "runs/get", {"params": {"run_id": run_id}}),
        ("POST", "runs/log-batch", {"json": {"run_id": run_id, "metrics": [{"key": "x", "value": 1, "step": 0,
                                                                            "timestamp": 1}]}}),
        ("POST", "runs/set-tag", {"json": {"run_id": run_id, "key": "k", "value": "v"}}),
        ("POST", "runs/update", {"json": {"run_id": run_id, "status": "KILLED"}}),
        ("GET", "experiments/get", {"params": {"experiment_id": exp}}),
    ]:
        res = _call(url, team.other_key, method, endpoint, **kw)
        assert res.status_code == 404, (endpoint, res.text)
        assert res.json()["error_code"] == "RESOURCE_DOES_NOT_EXIST" and "mine" not in res.text
    art = httpx.put(f"{url}/api/2.0/mlflow-artifacts/artifacts/{exp}/{run_id}/artifacts/x.txt", content=b"hi",
                    headers={"Authorization": f"Bearer {team.other_key}"})
    assert art.status_code == 404 and not Artifact.objects.exists()
    run = Run.objects.get()
    assert run.status == "running" and not MetricSeries.objects.exists() and run.tags == ["experiment=mine"]


def test_malformed_bodies_and_oversized_batches_get_clear_errors(live_server: Any, team: Any) -> None:
    url, key = live_server.url, team.key
    run_id = _call(url, key, "POST", "runs/create", json={}).json()["run"]["info"]["run_id"]

    def refused(body: Any, status: int, code: str, words: str, raw: bool = False) -> None:
        res = _call(url, key, "POST", "runs/log-batch", **({"content": body} if raw else {"json": body}))
        assert res.status_code == status and res.json()["error_code"] == code, res.text
        assert words in res.json()["message"], res.json()["message"]

    refused(b"{not json", 400, "MALFORMED_REQUEST", "not valid JSON", raw=True)
    refused(b"[1, 2]", 400, "MALFORMED_REQUEST", "must be a JSON object", raw=True)
    refused({"run_id": run_id, "metrics": [{"key": "a", "value": 1, "step": 0}, {"key": "b", "value": "abc"}]},
            400, "INVALID_PARAMETER_VALUE", "metrics[1].value")
    refused({"run_id": run_id, "metrics": [{"key": "a", "value": 1, "step": "one"}]}, 400,
            "INVALID_PARAMETER_VALUE", "metrics[0].step")
    many = [{"key": f"k{i}", "value": i, "step": 0, "timestamp": 1} for i in range(1001)]
    refused({"run_id": run_id, "metrics": many}, 400, "INVALID_PARAMETER_VALUE", "at most 1000 metrics. Got 1001")
    params = [{"key": f"p{i}", "value": "v"} for i in range(101)]
    refused({"run_id": run_id, "params": params}, 400, "INVALID_PARAMETER_VALUE", "at most 100 params")
    refused({"run_id": "nope", "metrics": []}, 404, "RESOURCE_DOES_NOT_EXIST", "Run 'nope' not found")
    assert not MetricSeries.objects.exists()  # nothing of a refused batch was kept
    assert _call(url, key, "POST", "runs/no-such-thing", json={}).json()["error_code"] == "ENDPOINT_NOT_FOUND"
    # A batch of exactly the limits goes in whole.
    _call(url, key, "POST", "runs/log-batch", json={"run_id": run_id, "metrics": many[:1000]}).raise_for_status()
    assert Metric.objects.count() == 1000


def test_server_stopped_and_started_under_a_running_client(team: Any) -> None:
    port, steps = free_port(), 600
    server = {"proc": gunicorn(port, workers=2)}
    env = mlflow_env(f"http://127.0.0.1:{port}", team.key, MLFLOW_HTTP_REQUEST_MAX_RETRIES="10",
                     MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR="1")
    writer = subprocess.Popen([sys.executable, str(SLOW), str(steps)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        run_id = writer.stdout.readline().strip().removeprefix("RUN_ID=")  # type: ignore[union-attr]
        deadline = time.monotonic() + 60
        while Metric.objects.filter(series__run__external_id=run_id).count() < 100:
            assert time.monotonic() < deadline and writer.poll() is None, writer.stderr.read()[-3000:]  # type: ignore[union-attr]
            time.sleep(0.05)
        os.killpg(server["proc"].pid, signal.SIGKILL)  # mid-run, mid-request, no goodbye
        server["proc"].wait()
        stopped_at = Metric.objects.filter(series__run__external_id=run_id).count()
        time.sleep(2)
        server["proc"] = gunicorn(port, workers=2)
        out, err = writer.communicate(timeout=240)
    finally:
        writer.kill()
        if server["proc"].poll() is None:
            os.killpg(server["proc"].pid, signal.SIGTERM)
            server["proc"].wait(30)
    assert writer.returncode == 0 and "DONE" in out, err[-3000:]
    run = Run.objects.get(external_id=run_id)
    assert stopped_at < 2 * steps  # the stop came before the end
    assert run.status == "finished" and run.config["lr"] == "1e-6"
    assert Metric.objects.filter(series__run=run).count() == 2 * steps
    assert sorted(MetricSeries.objects.filter(run=run).values_list("count", flat=True)) == [steps, steps]
    assert dict(Metric.objects.filter(series__run=run, series__key="reward").values_list("step", "value")) == {
        s: s / steps for s in range(steps)}
