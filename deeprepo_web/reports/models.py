"""A report: a title and an ordered list of blocks (Markdown text or a panel of live data).

Blocks are rows of their own, each with a version counter, so two editors saving different blocks
never overwrite each other, and two saving the same block are told (optimistic locking). Every save
also writes a ReportVersion: a snapshot of the whole report, numbered per report, with who and when.
Publishing a version stores every panel's data in it (`frozen`): readers of a published report
see those numbers, never recomputed ones.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.models import new_public_id


class Report(models.Model):
    public_id = models.CharField(max_length=24, unique=True, default=new_public_id)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="reports")
    title = models.CharField(max_length=300)
    title_version = models.IntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)
    published = models.ForeignKey("ReportVersion", null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")

    class Meta:
        indexes = [models.Index(fields=["project", "-updated_at"], name="report_project_updated")]

    def __str__(self) -> str:
        return self.title


class Block(models.Model):
    """One block of a report's draft. `uid` is stable across versions (a restore keeps it)."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="blocks")
    uid = models.CharField(max_length=24, default=new_public_id)
    kind = models.CharField(max_length=32)
    position = models.IntegerField()
    text = models.TextField(blank=True, default="")  # Markdown, for text blocks
    params = models.JSONField(default=dict, blank=True)  # what a panel shows
    version = models.IntegerField(default=1)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["report", "uid"], name="block_report_uid_unique")]
        indexes = [models.Index(fields=["report", "position"], name="block_report_position")]

    def snapshot(self) -> dict[str, object]:
        return {"uid": self.uid, "kind": self.kind, "text": self.text, "params": self.params}


class ReportVersion(models.Model):
    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="versions")
    number = models.IntegerField()
    title = models.CharField(max_length=300)
    blocks = models.JSONField(default=list)  # [Block.snapshot(), ...] in order
    note = models.CharField(max_length=200, blank=True, default="")  # what this save did
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    # Set when published: {block uid: the panel's data as computed at `as_of`}.
    frozen = models.JSONField(null=True, blank=True)
    as_of = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["report", "number"], name="report_version_unique")]

    @property
    def is_published(self) -> bool:
        return self.as_of is not None  # set with `frozen`, and cheap to read without it
