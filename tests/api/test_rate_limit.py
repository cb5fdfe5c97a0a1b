"""A request limit per API key: past it the answer is 429 with Retry-After, counted in the real
Redis; the real client waits as asked and sends again, and nothing it logged is lost."""

from __future__ import annotations

import base64

import pytest

import deeprepo_client
from deeprepo_web.runs.models import Metric, Run
from tests.jobs.worker import redis_db_number


@pytest.fixture
def limited(settings):
    settings.DEEPREPO_RATE_REDIS_URL = f"redis://127.0.0.1:6379/{redis_db_number()}"
    settings.DEEPREPO_RATE_WINDOW_SECONDS = 60
    settings.DEEPREPO_RATE_INGEST_PER_WINDOW = 3
    settings.DEEPREPO_RATE_READ_PER_WINDOW = 5
    return settings


def _post(client, key, **headers):
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    return client.post("/api/v1/runs", data={"name": "r"}, content_type="application/json",
                       headers={**auth, **headers})


def test_ingest_past_the_limit_gets_429_with_retry_after(client, team, limited):
    assert [_post(client, team.key).status_code for _ in range(3)] == [201, 201, 201]
    res = _post(client, team.key)
    assert res.status_code == 429
    assert 1 <= int(res["Retry-After"]) <= 60 and "try again in" in res.json()["error"]
    assert Run.objects.filter(project=team.project).count() == 3  # the refused request stored nothing
    # Reads have their own allowance; another key, and a made-up key, count apart.
    assert client.get("/api/v1/runs", headers={"Authorization": f"Bearer {team.key}"}).status_code == 200
    assert _post(client, team.other_key).status_code == 201
    made_up = "drk_" + team.key[4:-4] + "xxxx"  # the real key's prefix, a wrong secret
    assert [_post(client, made_up).status_code for _ in range(4)] == [401, 401, 401, 429]  # guessing is limited too
    assert _post(client, team.other_key).status_code == 201


def test_reads_and_basic_auth_are_counted(client, team, limited):
    basic = "Basic " + base64.b64encode(f"api:{team.key}".encode()).decode()
    codes = [client.get("/api/v1/runs", headers={"Authorization": basic if i % 2 else f"Bearer {team.key}"}).status_code
             for i in range(6)]
    assert codes[:5] != [429] * 5 and codes[5] == 429


def test_off_when_zero_or_without_redis(client, team, limited):
    limited.DEEPREPO_RATE_INGEST_PER_WINDOW = 0
    assert {_post(client, team.key).status_code for _ in range(5)} == {201}
    limited.DEEPREPO_RATE_INGEST_PER_WINDOW = 1
    limited.DEEPREPO_RATE_REDIS_URL = "redis://127.0.0.1:1/0"  # nobody listens: the limit gives way
    assert {_post(client, team.key).status_code for _ in range(3)} == {201}


@pytest.mark.django_db(transaction=True)
def test_the_client_waits_and_nothing_is_lost(live_server, team, limited, tmp_path, capsys):
    limited.DEEPREPO_RATE_WINDOW_SECONDS = 1
    limited.DEEPREPO_RATE_INGEST_PER_WINDOW = 4
    run = deeprepo_client.init(project="demo", name="limited", url=live_server.url, api_key=team.key,
                               spool_dir=tmp_path, flush_interval=0.02, batch_points=10, request_bytes=300)
    for step in range(200):
        run.log({"reward": step / 200}, step=step)
    assert run.finish(timeout=120).ok
    assert "server answered 429, retry after" in capsys.readouterr().err
    stored = Run.objects.get(public_id=run.id)
    assert stored.status == "finished"
    assert sorted(Metric.objects.filter(series__run=stored).values_list("step", flat=True)) == list(range(200))
