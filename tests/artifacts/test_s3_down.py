"""With the object store down: a clear error where it is needed, and the run's other data unaffected."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.runs import services
from deeprepo_web.runs.models import Metric, Rollout, Run
from tests.artifacts.conftest import sha, upload
from tests.factories import rollout
from tests.infra._proc import free_port


@pytest.fixture
def dead_s3(settings: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDDEAD")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dead")
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens here
    settings.DEEPREPO_S3_BUCKET = "deeprepo-test"
    settings.DEEPREPO_S3_ENDPOINT_URL = endpoint
    return endpoint


def test_begin_upload_gives_a_clear_503(api: Any, run_id: str, team: Any, dead_s3: str, settings: Any) -> None:
    settings.DEEPREPO_ARTIFACT_PART_BYTES = 5 * 1024 * 1024
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "big.bin", "size": 50 * 1024 * 1024, "sha256": "a" * 64})
    assert res.status_code == 503
    error = res.json()["error"]
    assert error.startswith("artifact store unavailable, try again later") and dead_s3 in error
    assert not Artifact.objects.exists()  # nothing half-written


def test_other_data_unaffected(api: Any, client: Any, run_id: str, team: Any, dead_s3: str) -> None:
    assert api.post(f"/runs/{run_id}/metrics", [{"step": 1, "values": {"reward": 0.5}}]).json()["stored"] == 1
    assert api.post(f"/runs/{run_id}/rollouts", [rollout("small")]).json()["stored"] == 1
    client.force_login(team.viewer)
    assert client.get(f"/p/demo/runs/{run_id}/").status_code == 200
    page = client.get(f"/p/demo/runs/{run_id}/artifacts/")
    assert page.status_code == 200 and b"No artifacts" in page.content
    assert Metric.objects.count() == 1 and Rollout.objects.count() == 1


def test_big_body_refused_with_503_not_truncated(api: Any, run_id: str, dead_s3: str, settings: Any) -> None:
    settings.DEEPREPO_BLOB_THRESHOLD = 1024
    record = rollout("big", turns=1)
    record["turns"][1]["tool_calls"][0]["output"] = "x" * 5000
    res = api.post(f"/runs/{run_id}/rollouts", [record])
    assert res.status_code == 503 and "unreachable" in res.json()["error"]
    assert not Rollout.objects.exists()  # the client keeps the batch and sends it again later


def test_run_delete_refused_while_store_down(api: Any, run_id: str, team: Any, settings: Any, dead_s3: str) -> None:
    settings.DEEPREPO_S3_BUCKET = ""
    upload(api, run_id, b"abc", name="a.txt")  # stored on the filesystem
    settings.DEEPREPO_S3_BUCKET = "deeprepo-test"
    from deeprepo_web.storage import StorageUnavailable

    with pytest.raises(StorageUnavailable):
        services.run_delete(run=Run.objects.get(public_id=run_id))
    assert Run.objects.filter(public_id=run_id).exists()
    assert sha(b"abc") == Artifact.objects.get().sha256
