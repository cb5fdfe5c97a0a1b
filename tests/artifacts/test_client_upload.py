"""deeprepo_client's run.log_artifact against the live web app: single PUT, and multipart with an
interruption and a resume that sends only the missing parts."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

import deeprepo_client
from deeprepo_client import artifacts as client_artifacts
from deeprepo_web.artifacts.models import Artifact
from tests.infra.s3 import BUCKET

pytestmark = pytest.mark.django_db(transaction=True)


def _file(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "adapter_model.safetensors"
    with open(path, "wb") as fh:
        left = size
        while left:
            chunk = os.urandom(min(left, 1 << 20))
            fh.write(chunk)
            left -= len(chunk)
    return path


def _init(live_server: Any, team: Any, tmp_path: Path) -> Any:
    return deeprepo_client.init(project="demo", name="ckpt-upload", url=live_server.url, api_key=team.key,
                                spool_dir=tmp_path / "spool", flush_interval=0.1)


def test_log_artifact_filesystem(live_server: Any, team: Any, fs_store: str, tmp_path: Path) -> None:
    path = _file(tmp_path, 3 * 1024 * 1024 + 7)
    run = _init(live_server, team, tmp_path)
    art = run.log_artifact(path, kind="checkpoint")
    assert art["status"] == "ready" and art["name"] == "adapter_model.safetensors"
    row = Artifact.objects.get(pk=art["id"])
    assert row.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    again = run.log_artifact(path, kind="checkpoint")  # already there: nothing is sent
    assert again["id"] == art["id"]
    run.finish()


def test_multipart_interrupted_then_resumed(live_server: Any, team: Any, s3_store: Any, settings: Any,
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.DEEPREPO_ARTIFACT_PART_BYTES = 5 * 1024 * 1024  # S3's minimum part size
    path = _file(tmp_path, 16 * 1024 * 1024 + 123)  # 4 parts
    run = _init(live_server, team, tmp_path)

    real_put = client_artifacts._put
    sent: list[int] = []

    class Killed(BaseException):
        """Stands for the process dying mid-upload (nothing in the client may swallow it)."""

    def dying_put(http: Any, url: str, file: Path, offset: int, length: int) -> str:
        if offset // (5 * 1024 * 1024) + 1 >= 3:
            raise Killed
        sent.append(offset)
        return real_put(http, url, file, offset, length)

    monkeypatch.setattr(client_artifacts, "_put", dying_put)
    with pytest.raises(Killed):
        run.log_artifact(path, kind="checkpoint", workers=1)
    artifact = Artifact.objects.get()
    assert artifact.status == "pending" and artifact.upload_id
    resume_files = list((tmp_path / "spool" / "_artifact_uploads").glob("*.json"))
    assert len(resume_files) == 1 and '"artifact_id"' in resume_files[0].read_text()
    assert len(sent) == 2

    resumed: list[int] = []

    def counting_put(http: Any, url: str, file: Path, offset: int, length: int) -> str:
        resumed.append(offset // (5 * 1024 * 1024) + 1)
        return real_put(http, url, file, offset, length)

    monkeypatch.setattr(client_artifacts, "_put", counting_put)
    monkeypatch.setattr(client_artifacts, "file_sha256", lambda p: pytest.fail("re-hashed the file on resume"))
    art = run.log_artifact(path, kind="checkpoint", workers=3)
    assert sorted(resumed) == [3, 4]  # only the parts the store did not have
    assert art["status"] == "ready"
    artifact.refresh_from_db()
    assert artifact.upload_id == ""
    body = s3_store.client().get_object(Bucket=BUCKET, Key=artifact.storage_key)["Body"].read()
    assert hashlib.sha256(body).hexdigest() == artifact.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert list((tmp_path / "spool" / "_artifact_uploads").glob("*.json")) == []
    run.finish()


def test_multipart_parts_bypass_the_web_process(live_server: Any, team: Any, s3_store: Any, settings: Any,
                                                tmp_path: Path) -> None:
    settings.DEEPREPO_ARTIFACT_PART_BYTES = 5 * 1024 * 1024
    path = _file(tmp_path, 11 * 1024 * 1024)
    run = _init(live_server, team, tmp_path)
    res = httpx.post(f"{live_server.url}/api/v1/runs/{run.id}/artifacts",
                     headers={"Authorization": f"Bearer {team.key}"},
                     json={"name": "x.bin", "size": path.stat().st_size, "sha256": "0" * 64})
    plan = res.json()["upload"]
    assert plan["method"] == "multipart" and len(plan["parts"]) == 3
    assert all(p["url"].startswith(s3_store.endpoint) for p in plan["parts"])
    run.finish()
