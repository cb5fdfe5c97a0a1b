from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project


class ShareKind(models.TextChoices):
    RUN = "run"
    COMPARISON = "comparison"
    ROLLOUT = "rollout"
    EXAMPLE = "example"
    REPORT = "report"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    # 32 bytes = 256 random bits; only its sha256 is stored, the token is shown once.
    return secrets.token_urlsafe(32)


class ShareLink(models.Model):
    """A read-only link to one object. The target is a run, rollout, example or report row, or a comparison
    (a list of run public ids and the table's options, kept in `params`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="share_links")
    kind = models.CharField(max_length=16, choices=ShareKind.choices)
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # No foreign key in Postgres: two statement-level triggers keep it (runs/references.py).
    rollout = models.ForeignKey("runs.Rollout", null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                                db_constraint=False)
    example = models.ForeignKey("runs.Example", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # A report link shows the report's published version (its frozen data), whichever is newest.
    report = models.ForeignKey("reports.Report", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    params = models.JSONField(default=dict, blank=True)
    title = models.CharField(max_length=200, blank=True, default="")
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=8)  # lets owners tell their links apart
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    views = models.IntegerField(default=0)
    last_viewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "-created_at"], name="share_project_created")]

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"
