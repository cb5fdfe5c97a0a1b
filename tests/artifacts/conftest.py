"""Stores for the artifact tests: the filesystem default and a real S3 server (rclone) that checks signatures."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import time_machine

from tests.infra.fixtures import s3_server  # noqa: F401
from tests.infra.s3 import BUCKET, S3Server


@pytest.fixture
def fs_store(team: Any, settings: Any) -> str:
    settings.DEEPREPO_S3_BUCKET = ""
    return "filesystem"


@pytest.fixture
def s3_store(team: Any, settings: Any, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:  # noqa: F811
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    settings.DEEPREPO_S3_BUCKET = BUCKET
    settings.DEEPREPO_S3_ENDPOINT_URL = s3_server.endpoint
    return s3_server


@pytest.fixture(params=["filesystem", "s3"])
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test once per store."""
    request.getfixturevalue("fs_store" if request.param == "filesystem" else "s3_store")
    yield request.param


def made_earlier(seconds: float = 10.0) -> AbstractContextManager[Any]:
    """The clock, while a link is made, reads `seconds` ago: a link with a shorter lifetime is expired
    when the test uses it, with no sleep. (The clock is the one boundary patched: Django's signer and
    botocore's presigner read it; the checks, in this process or the S3 server, use the real time.)"""
    return time_machine.travel(time.time() - seconds)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put(client: Any, url: str, data: bytes) -> tuple[int, str]:
    """PUT bytes to an upload URL: Django's test client for our own signed URLs, HTTP for S3."""
    parts = urlsplit(url)
    if parts.hostname == "testserver":
        res = client.generic("PUT", parts.path, data=data, content_type="application/octet-stream")
        return res.status_code, res.content.decode()
    res = httpx.put(url, content=data, timeout=30)
    return res.status_code, res.text


def get(client: Any, url: str) -> tuple[int, bytes]:
    parts = urlsplit(url)
    if parts.hostname in ("testserver", None):
        res = client.get(parts.path + (f"?{parts.query}" if parts.query else ""))
        body = b"".join(res.streaming_content) if getattr(res, "streaming", False) else res.content
        return res.status_code, body
    res = httpx.get(url, timeout=30)
    return res.status_code, res.content


def upload(api: Any, run_id: str, data: bytes, name: str = "model.bin", kind: str = "checkpoint") -> dict[str, Any]:
    res = api.post(f"/runs/{run_id}/artifacts", {"name": name, "kind": kind, "size": len(data), "sha256": sha(data)})
    assert res.status_code == 201, res.content
    body = res.json()
    assert body["upload"]["method"] == "put"
    status, text = put(api.client, body["upload"]["url"], data)
    assert status == 200, text
    res = api.post(f"/runs/{run_id}/artifacts/{body['artifact']['id']}/confirm", None)
    assert res.status_code == 200, res.content
    return dict(res.json())


@pytest.fixture
def run_id(api: Any) -> str:
    res = api.post("/runs", {"name": "grpo-artifacts"})
    assert res.status_code == 201
    return str(res.json()["id"])




@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    # PBKDF2 for the team's five users costs ~2 s per test here; hashing is not what these tests check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
