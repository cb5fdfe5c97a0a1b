"""Bad names, sizes and checksums get one clear line, and nothing half-written stays behind."""

from __future__ import annotations

import os
from typing import Any

import pytest

from deeprepo_web import storage
from deeprepo_web.artifacts.models import Artifact
from tests.artifacts.conftest import put, sha


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../etc/passwd", "'..' segment"),
        ("ckpt/../../../x", "'..' segment"),
        ("/etc/passwd", "absolute path"),
        ("C:/Windows/x", "absolute path"),
        ("a\x00b", "NUL"),
        ("x" * 10_240, "over the limit of 1000"),
        ("", "must not be empty"),
        ("a//b", "empty"),
        ("a\\b", "separator"),
        ("line\nbreak", "control characters"),
    ],
)
def test_bad_names_are_refused(api: Any, run_id: str, fs_store: str, name: str, expected: str) -> None:
    res = api.post(f"/runs/{run_id}/artifacts", {"name": name, "size": 3, "sha256": sha(b"abc")})
    assert res.status_code == 422
    error = res.json()["error"]
    assert error.startswith("name:") and expected in error
    assert not Artifact.objects.exists()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"size": -1, "sha256": "0" * 64}, "size:"),
        ({"size": 3, "sha256": "xyz"}, "sha256: must be 64 hexadecimal"),
        ({"size": 3, "sha256": "0" * 64, "kind": "<script>"}, "kind:"),
        ({"size": 10 * 1024**4, "sha256": "0" * 64}, "over the limit"),
    ],
)
def test_bad_fields_are_refused(api: Any, run_id: str, fs_store: str, body: dict[str, Any], expected: str) -> None:
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "a.bin", **body})
    assert res.status_code == 422 and expected in res.json()["error"]


def _begin(api: Any, run_id: str, size: int, digest: str, name: str = "m.bin") -> dict[str, Any]:
    res = api.post(f"/runs/{run_id}/artifacts", {"name": name, "size": size, "sha256": digest})
    assert res.status_code == 201, res.content
    return dict(res.json())


def test_checksum_mismatch_rejected(api: Any, run_id: str, store: str) -> None:
    data = os.urandom(20_000)
    begun = _begin(api, run_id, len(data), sha(b"something else" + data[14:]))
    status, text = put(api.client, begun["upload"]["url"], data)
    if store == "filesystem":
        assert status == 400 and "sha256: the upload hashes to" in text  # refused while streaming
    res = api.post(f"/runs/{run_id}/artifacts/{begun['artifact']['id']}/confirm", None)
    assert res.status_code == 422
    artifact = Artifact.objects.get(pk=begun["artifact"]["id"])
    assert artifact.status == "pending"
    assert not storage.backend().exists(artifact.storage_key)  # the wrong bytes are gone
    if store == "s3":
        assert res.json()["error"].startswith("sha256: the upload hashes to")


def test_size_mismatch_rejected(api: Any, run_id: str, store: str) -> None:
    data = os.urandom(5000)
    begun = _begin(api, run_id, len(data) + 10, sha(data))
    status, text = put(api.client, begun["upload"]["url"], data)
    if store == "filesystem":
        assert status == 400 and "size:" in text
    res = api.post(f"/runs/{run_id}/artifacts/{begun['artifact']['id']}/confirm", None)
    assert res.status_code == 422
    assert res.json()["error"].startswith(("size:", "upload: no bytes"))
    assert Artifact.objects.get(pk=begun["artifact"]["id"]).status == "pending"


def test_confirm_before_upload(api: Any, run_id: str, store: str) -> None:
    begun = _begin(api, run_id, 3, sha(b"abc"))
    res = api.post(f"/runs/{run_id}/artifacts/{begun['artifact']['id']}/confirm", None)
    assert res.status_code == 422 and res.json()["error"] == "upload: no bytes were uploaded for this artifact yet"


def test_download_of_pending_artifact_refused(api: Any, run_id: str, fs_store: str) -> None:
    begun = _begin(api, run_id, 3, sha(b"abc"))
    res = api.get(f"/runs/{run_id}/artifacts/{begun['artifact']['id']}/download")
    assert res.status_code == 422 and "still being uploaded" in res.json()["error"]


def test_viewer_key_scope_and_other_project(api: Any, other_api: Any, run_id: str, fs_store: str) -> None:
    res = other_api.post(f"/runs/{run_id}/artifacts", {"name": "x", "size": 3, "sha256": sha(b"abc")})
    assert res.status_code == 404
