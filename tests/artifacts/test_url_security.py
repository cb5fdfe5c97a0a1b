"""Presigned / signed URLs: tampered or expired ones are refused by the server that holds the bytes;
outsiders never get a URL."""

from __future__ import annotations

import os
from typing import Any

import httpx
import pytest

from deeprepo_web.artifacts import services
from deeprepo_web.artifacts.models import Artifact
from tests.artifacts.conftest import get, made_earlier, put, sha, upload
from tests.conftest import Api


def _tamper_signature(url: str) -> str:
    i = url.index("X-Amz-Signature=") + len("X-Amz-Signature=") + 5
    return url[:i] + ("0" if url[i] != "0" else "1") + url[i + 1 :]


def test_s3_refuses_tampered_put(api: Any, run_id: str, s3_store: Any) -> None:
    data = os.urandom(1000)
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "a.bin", "size": len(data), "sha256": sha(data)})
    url = res.json()["upload"]["url"]
    bad = httpx.put(_tamper_signature(url), content=data)
    assert bad.status_code == 403 and "SignatureDoesNotMatch" in bad.text
    # The same URL with another key in the path is refused too (the signature covers the path).
    other = url.replace("/a.bin?", "/b.bin?")
    assert httpx.put(other, content=data).status_code == 403
    assert s3_store.keys(f"projects/{Artifact.objects.get().run.project_id}/") == []


def test_s3_refuses_tampered_and_expired_get(api: Any, run_id: str, s3_store: Any) -> None:
    data = os.urandom(2000)
    art = upload(api, run_id, data)
    artifact = Artifact.objects.get(pk=art["id"])
    url = services.artifact_download_url(artifact=artifact, ttl=60)
    assert httpx.get(url).content == data
    assert httpx.get(_tamper_signature(url)).status_code == 403
    with made_earlier():
        short = services.artifact_download_url(artifact=artifact, ttl=1)
    expired = httpx.get(short)
    assert expired.status_code in (400, 403) and b"AccessDenied" in expired.content
    assert data not in expired.content


def test_filesystem_refuses_tampered_and_expired_urls(api: Any, run_id: str, fs_store: str,
                                                      settings: Any) -> None:
    data = os.urandom(2000)
    art = upload(api, run_id, data)
    artifact = Artifact.objects.get(pk=art["id"])
    url = services.artifact_download_url(artifact=artifact, ttl=60)
    assert get(api.client, url) == (200, data)
    head, sig = url.rstrip("/").rsplit(":", 1)
    tampered = f"{head}:{'A' if sig[0] != 'A' else 'B'}{sig[1:]}/"
    assert get(api.client, tampered)[0] == 403
    with made_earlier():
        short = services.artifact_download_url(artifact=artifact, ttl=1)
    status, body = get(api.client, short)
    assert status == 403 and body == b"Download link expired."

    settings.DEEPREPO_ARTIFACT_URL_TTL = 1
    with made_earlier():
        res = api.post(f"/runs/{run_id}/artifacts", {"name": "late.bin", "size": 3, "sha256": sha(b"abc")})
    put_url = res.json()["upload"]["url"]
    status, text = put(api.client, put_url, b"abc")
    assert status == 403 and "expired" in text


@pytest.mark.parametrize("store_name", ["fs_store", "s3_store"])
def test_outsider_cannot_get_download_url(request: pytest.FixtureRequest, client: Any, api: Any, other_api: Any,
                                          team: Any, run_id: str, store_name: str) -> None:
    request.getfixturevalue(store_name)
    art = upload(api, run_id, b"secret weights" * 100)
    path = f"/runs/{run_id}/artifacts/{art['id']}/download"
    assert other_api.get(path).status_code == 404  # another project's API key
    client.force_login(team.outsider)
    assert Api(client, None).get(path).status_code == 404  # a logged-in outsider
    page = client.get(f"/p/demo/runs/{run_id}/artifacts/{art['id']}/download/")
    assert page.status_code == 404
    client.force_login(team.viewer)  # a viewer may download
    assert Api(client, None).get(path).status_code == 200
    assert client.get(f"/p/demo/runs/{run_id}/artifacts/{art['id']}/download/").status_code == 302
