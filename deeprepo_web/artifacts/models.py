"""A run's artifacts: the rows; their bytes are in the object store (`deeprepo_web.storage`)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from deeprepo_web.runs.models import Run


class ArtifactStatus(models.TextChoices):
    PENDING = "pending"
    READY = "ready"


class Artifact(models.Model):
    """A file of a run (a checkpoint, a media file, an MLflow or W&B upload), its bytes in the store."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=1000)
    kind = models.CharField(max_length=64, default="file")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    storage_key = models.CharField(max_length=1200)
    status = models.CharField(max_length=12, choices=ArtifactStatus.choices, default=ArtifactStatus.PENDING)
    upload_id = models.CharField(max_length=500, blank=True, default="")  # S3 multipart upload
    created_at = models.DateTimeField(default=timezone.now)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "runs_artifact"  # made by the runs app, which held this model until 0011; the rows stayed
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="artifact_run_name_unique")]
