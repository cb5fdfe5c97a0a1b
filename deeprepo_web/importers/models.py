from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project


class ImportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ImportOrigin(models.TextChoices):
    UPLOAD = "upload", "upload"
    API = "api", "API"
    CLI = "cli", "command line"
    JOB = "job", "job outputs"


class ImportJob(models.Model):
    """One import being turned into runs: an upload (a file, a zipped folder, or several files), or a
    path read in place by `manage.py import` or a finished job; every one is listed on the import page."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=8, choices=ImportStatus.choices, default=ImportStatus.QUEUED)
    source_name = models.CharField(max_length=1000)  # what the user uploaded, as they named it
    # The stored upload under DATA_DIR/uploads, or the path a command or a job imported in place.
    path = models.CharField(max_length=2000)
    origin = models.CharField(max_length=8, choices=ImportOrigin.choices, default=ImportOrigin.UPLOAD)
    size = models.BigIntegerField(default=0)
    fmt = models.CharField(max_length=32, blank=True, default="")  # forced format, '' = detect
    # Rows (rollouts + metric points) read so far; a running import updates it about once a second.
    progress = models.BigIntegerField(default=0)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    # When run_import was last sent for it: a job still queued long after (its message never
    # reached the broker, or died with it) is sent again by beat (importers.jobs.import_jobs_resend).
    sent_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    # Renewed while an import runs; a running job whose heartbeat stopped lost its worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"], name="importjob_project_created")]

    @property
    def is_final(self) -> bool:
        return self.status in (ImportStatus.DONE, ImportStatus.FAILED)

    @property
    def problems_total(self) -> int:
        return int((self.report or {}).get("problems_total") or 0)

    @property
    def uploaded(self) -> bool:
        """Its input is a stored upload (a worker can import it again); else a path on the importing machine."""
        return self.origin in (ImportOrigin.UPLOAD, ImportOrigin.API)
