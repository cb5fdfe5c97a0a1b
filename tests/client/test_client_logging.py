"""The Python client against a real server (Django's live server on the test database)."""

from __future__ import annotations

import math
import socket

import pytest

import deeprepo_client
from deeprepo_client.cli import main as cli_main
from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run, ToolCall
from tests.factories import rollout

pytestmark = pytest.mark.django_db(transaction=True)


def _dead_url() -> str:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_client_logs_a_run_that_the_api_returns(live_server, team, tmp_path):
    run = deeprepo_client.init(project="demo", name="grpo", config={"lr": 0.1}, url=live_server.url,
                               api_key=team.key, spool_dir=tmp_path, flush_interval=0.1)
    assert run.id is not None
    for step in range(30):
        run.log({"reward": step / 30, "loss": float("nan") if step == 5 else 1.0}, step=step)
    run.log_rollouts([rollout(f"ex-{i}", reward=i / 10) for i in range(7)])
    assert run.finish().ok
    stored = Run.objects.get(public_id=run.id)
    assert stored.status == "finished" and stored.config == {"lr": 0.1}
    assert MetricSeries.objects.get(run=stored, key="reward").count == 30
    assert math.isnan(Metric.objects.get(series__run=stored, series__key="loss", step=5).value)
    assert Rollout.objects.filter(run=stored).count() == 7
    assert ToolCall.objects.filter(rollout__run=stored, parent__isnull=False).count() == 7 * 3 * 2
    assert not (tmp_path / run.local_id).exists()  # a fully sent spool is removed


def test_server_away_spools_and_sync_uploads_once(live_server, team, tmp_path, capsys):
    run = deeprepo_client.init(name="away", url=_dead_url(), api_key=team.key, spool_dir=tmp_path,
                               flush_interval=0.05)
    assert run.id is None
    for step in range(2500):
        run.log({"reward": step / 2500}, step=step)
    run.log_rollouts([rollout(f"ex-{i}") for i in range(120)])
    assert not run.finish(timeout=0.5)
    assert "deeprepo sync" in capsys.readouterr().err
    args = ["--url", live_server.url, "--api-key", team.key, "sync", str(tmp_path)]
    assert cli_main(args) == 0
    assert cli_main(args) == 0  # a second sync sends nothing new
    stored = Run.objects.get(name="away")
    assert stored.status == "finished"
    assert Metric.objects.filter(series__run=stored).count() == 2500
    assert Rollout.objects.filter(run=stored).count() == 120


def test_offline_mode_writes_the_same_spool(live_server, team, tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPREPO_MODE", "offline")
    run = deeprepo_client.init(name="offline", spool_dir=tmp_path)
    run.log({"reward": 1.0}, step=0)
    run.log_rollouts([rollout("ex-1")])
    run.finish()
    assert Run.objects.count() == 0
    assert cli_main(["--url", live_server.url, "--api-key", team.key, "sync", str(tmp_path / run.local_id)]) == 0
    stored = Run.objects.get(name="offline")
    assert stored.rollouts.count() == 1 and stored.series.get(key="reward").last_value == 1.0


def test_run_id_from_the_environment_logs_into_that_run(live_server, team, tmp_path, monkeypatch, api):
    run_id = api.post("/runs", {"name": "from-a-job", "status": "queued"}).json()["id"]
    monkeypatch.setenv("DEEPREPO_RUN_ID", run_id)
    monkeypatch.setenv("DEEPREPO_URL", live_server.url)
    monkeypatch.setenv("DEEPREPO_API_KEY", team.key)
    run = deeprepo_client.init(spool_dir=tmp_path, flush_interval=0.05, model="qwen3-8b", environment="audit")
    run.log({"reward": 0.5}, step=3)
    assert run.finish()
    stored = Run.objects.get(public_id=run_id)
    assert stored.status == "finished" and stored.started_at is not None
    assert (stored.model, stored.environment, stored.name) == ("qwen3-8b", "audit", "from-a-job")
    assert stored.series.get(key="reward").last_step == 3


def test_a_bad_api_key_fails_loudly_at_init(live_server, tmp_path):
    with pytest.raises(Exception, match="401"):
        deeprepo_client.init(name="x", url=live_server.url, api_key="drk_nope_nope", spool_dir=tmp_path)
