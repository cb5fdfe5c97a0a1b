"""Upload → confirm → list → download, on the filesystem default and on S3."""

from __future__ import annotations

import os
from typing import Any

from deeprepo_web.artifacts.models import Artifact
from tests.artifacts.conftest import get, sha, upload


def test_upload_confirm_download(api: Any, run_id: str, store: str) -> None:
    data = os.urandom(300_000)
    art = upload(api, run_id, data, name="ckpt/step-100/adapter.safetensors")
    assert art["status"] == "ready" and art["size"] == len(data) and art["sha256"] == sha(data)
    row = Artifact.objects.get(pk=art["id"])
    assert f"/runs/{run_id}/artifacts/" in row.storage_key and row.confirmed_at is not None

    listed = api.get(f"/runs/{run_id}/artifacts").json()["artifacts"]
    assert [a["name"] for a in listed] == ["ckpt/step-100/adapter.safetensors"]

    url = api.get(f"/runs/{run_id}/artifacts/{art['id']}/download").json()["url"]
    status, body = get(api.client, url)
    assert status == 200 and body == data


def test_begin_again_after_ready_is_a_no_op(api: Any, run_id: str, store: str) -> None:
    data = b"x" * 5000
    upload(api, run_id, data, name="log.txt", kind="log")
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "log.txt", "kind": "log", "size": 5000, "sha256": sha(data)})
    assert res.status_code == 200 and res.json()["upload"] == {"method": "none"}


def test_same_name_other_content_conflicts(api: Any, run_id: str, store: str) -> None:
    upload(api, run_id, b"a" * 100, name="out.json")
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "out.json", "size": 3, "sha256": sha(b"abc")})
    assert res.status_code == 409 and "already has an artifact" in res.json()["error"]


def test_empty_file(api: Any, run_id: str, store: str) -> None:
    art = upload(api, run_id, b"", name="empty.txt")
    assert art["size"] == 0 and art["status"] == "ready"
