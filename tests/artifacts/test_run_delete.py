"""Deleting a run removes its stored objects, its metric rows, and the blobs no other run uses."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from deeprepo_web import storage
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.runs import services
from deeprepo_web.runs.models import BlobRef, Metric, MetricRollup, MetricSeries, Rollout, Run, Turn
from tests.artifacts.conftest import sha, upload
from tests.artifacts.test_blobs import png
from tests.factories import rollout


def _image_rollout(example: str, image: bytes) -> dict[str, Any]:
    record = rollout(example, turns=1)
    record["turns"][0]["content"] = f"![s](data:image/png;base64,{base64.b64encode(image).decode()})"
    return record


def test_run_delete_removes_objects_rows_and_unshared_blobs(api: Any, run_id: str, store: str) -> None:
    other_id = api.post("/runs", {"name": "other"}).json()["id"]
    salt = 50 + len(store)
    own, shared = png(seed=salt), png(seed=salt + 1)
    assert api.post(f"/runs/{run_id}/rollouts", [_image_rollout("a", own), _image_rollout("b", shared)]).status_code == 200
    assert api.post(f"/runs/{other_id}/rollouts", [_image_rollout("b", shared)]).status_code == 200
    api.post(f"/runs/{run_id}/metrics", [{"step": s, "values": {"reward": s / 10}} for s in range(50)])
    api.post(f"/runs/{other_id}/metrics", [{"step": s, "values": {"reward": 1.0}} for s in range(10)])
    art = upload(api, run_id, b"weights" * 1000, name="ckpt/adapter.bin")
    key = Artifact.objects.get(pk=art["id"]).storage_key
    # An upload begun and never confirmed: its multipart upload / partial object goes too.
    api.post(f"/runs/{run_id}/artifacts", {"name": "half.bin", "size": 3, "sha256": sha(b"abc")})
    assert storage.backend().exists(key)

    run = Run.objects.get(public_id=run_id)
    series_ids = list(MetricSeries.objects.filter(run=run).values_list("pk", flat=True))
    counts = services.run_delete(run=run)

    assert not Run.objects.filter(public_id=run_id).exists()
    assert not storage.backend().exists(key)
    assert counts["objects"] >= 1 and counts["metrics"] == 50 and counts["rollouts"] == 2
    assert not Metric.objects.filter(series_id__in=series_ids).exists()
    assert not MetricRollup.objects.filter(series_id__in=series_ids).exists()
    assert not Artifact.objects.filter(run_id=run.pk).exists()
    own_sha, shared_sha = hashlib.sha256(own).hexdigest(), hashlib.sha256(shared).hexdigest()
    assert not storage.backend().exists(storage.blob_key(own_sha))
    assert storage.blob_get(shared_sha) == shared  # still used by the other run
    assert BlobRef.objects.filter(sha=shared_sha).count() == 1
    # The other run is whole.
    assert Rollout.objects.filter(run__public_id=other_id).count() == 1
    assert Turn.objects.filter(rollout__run__public_id=other_id).exists()
    assert Metric.objects.filter(series__run__public_id=other_id).count() == 10


def test_run_delete_on_s3_leaves_no_keys(api: Any, run_id: str, s3_store: Any) -> None:
    upload(api, run_id, b"a" * 10, name="one.txt")
    upload(api, run_id, b"b" * 10, name="two/three.txt")
    run = Run.objects.get(public_id=run_id)
    prefix = storage.run_prefix(run.project_id, run.public_id)
    assert len(s3_store.keys(prefix)) == 2
    services.run_delete(run=run)
    assert s3_store.keys(prefix) == []
