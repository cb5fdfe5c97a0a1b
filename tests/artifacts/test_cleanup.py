"""The beat task artifacts_cleanup removes uploads never confirmed, and aborts their S3 multipart uploads."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from django.conf import settings as django_settings
from django.utils import timezone

from deeprepo_web.artifacts.models import Artifact
from tests.artifacts.conftest import sha, upload
from tests.infra.s3 import BUCKET
from workers.tasks import artifacts as tasks


def test_beat_schedules_cleanup() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["artifacts-cleanup"]
    assert entry["task"] == "deeprepo.artifacts_cleanup" == tasks.artifacts_cleanup.name


def test_stale_multipart_upload_is_aborted(api: Any, run_id: str, s3_store: Any, settings: Any) -> None:
    settings.DEEPREPO_ARTIFACT_PART_BYTES = 5 * 1024 * 1024
    settings.DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT = 3600
    size = 12 * 1024 * 1024
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "big.bin", "size": size, "sha256": "a" * 64})
    assert res.json()["upload"]["method"] == "multipart"
    stale = Artifact.objects.get(name="big.bin")
    res = api.post(f"/runs/{run_id}/artifacts", {"name": "fresh.bin", "size": 3, "sha256": sha(b"abc")})
    ready = upload(api, run_id, b"xyz", name="done.bin")
    Artifact.objects.filter(pk__in=[stale.pk, ready["id"]]).update(created_at=timezone.now() - timedelta(hours=2))

    assert tasks.artifacts_cleanup.apply().get() == 1

    assert set(Artifact.objects.values_list("name", flat=True)) == {"fresh.bin", "done.bin"}
    with pytest.raises(ClientError) as exc:
        s3_store.client().list_parts(Bucket=BUCKET, Key=stale.storage_key, UploadId=stale.upload_id)
    assert exc.value.response["Error"]["Code"] == "NoSuchUpload"


def test_stale_filesystem_upload_removed(api: Any, run_id: str, fs_store: str, settings: Any) -> None:
    settings.DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT = 60
    api.post(f"/runs/{run_id}/artifacts", {"name": "never.bin", "size": 3, "sha256": sha(b"abc")})
    assert tasks.artifacts_cleanup.apply().get() == 0  # not old enough yet
    Artifact.objects.update(created_at=timezone.now() - timedelta(seconds=61))
    assert tasks.artifacts_cleanup.apply().get() == 1
    assert not Artifact.objects.exists()
