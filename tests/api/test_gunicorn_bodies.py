"""Request bodies through a real gunicorn (the Procfile's server): wsgi.py reads a Content-Length body
from gunicorn's length reader in one piece; every byte must arrive, whatever the size or framing."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from deeprepo_web.runs.models import Rollout, Turn
from tests.factories import rollout
from tests.gunicorn import free_port, gunicorn

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def site() -> Iterator[str]:
    port = free_port()
    proc = gunicorn(port, workers=1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def _batch(n: int, text: str, prefix: str = "u") -> list[dict[str, Any]]:
    records = []
    for i in range(n):
        record = rollout(f"ex-{i % 8}", uid=f"{prefix}{i}", sample_index=i)
        record["turns"][0]["content"] = f"{i}:{text}"
        records.append(record)
    return records


def test_big_and_small_batches_arrive_whole_one_after_another_on_one_worker(team: Any, site: str) -> None:
    headers = {"Authorization": f"Bearer {team.key}", "Content-Type": "application/json"}
    with httpx.Client(base_url=f"{site}/api/v1", headers=headers, timeout=120) as api:
        run_id = api.post("/runs", json={"name": "bodies"}).json()["id"]
        # ~6 MB: thousands of the reader's 8 KB socket reads, an odd length, non-ASCII text
        text = "é∑ " * 700 + "x" * 1001
        big = json.dumps(_batch(800, text)).encode()
        assert len(big) > 5_000_000
        res = api.post(f"/runs/{run_id}/rollouts", content=big)
        assert res.status_code == 200 and res.json() == {"received": 800, "stored": 800}, res.text[:300]
        small = json.dumps([rollout("ex-x", uid="small")]).encode()
        assert api.post(f"/runs/{run_id}/rollouts", content=small).json()["stored"] == 1
        again = json.dumps(_batch(20, "again", prefix="c")).encode()
        assert api.post(f"/runs/{run_id}/rollouts", content=again).json()["stored"] == 20
        # a malformed body is still worded with its position
        bad = api.post(f"/runs/{run_id}/rollouts", content=big[:-1])
        assert bad.status_code == 400 and bad.json()["error"].startswith("malformed JSON at line 1 column")
    assert Rollout.objects.filter(run__public_id=run_id).count() == 821
    first = Turn.objects.get(rollout__run__public_id=run_id, rollout__uid="u799", index=0)
    assert first.content == f"799:{text}"
    assert Turn.objects.get(rollout__run__public_id=run_id, rollout__uid="c7", index=0).content == "7:again"
