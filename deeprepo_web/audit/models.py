"""One row per change an admin may need to trace: keys, members and roles, share links, deleted
runs, judge endpoints, clusters. Kept: retention never deletes these rows, and they outlive the
user, key or run they name (names are copied in, foreign keys are not used for them)."""

from __future__ import annotations

from django.db import models


class Action(models.TextChoices):
    KEY_CREATED = "key.created", "API key created"
    KEY_REVOKED = "key.revoked", "API key revoked"
    MEMBER_SET = "member.set", "member added or role changed"
    MEMBER_REMOVED = "member.removed", "member removed"
    SHARE_CREATED = "share.created", "share link created"
    SHARE_REVOKED = "share.revoked", "share link revoked"
    RUN_DELETED = "run.deleted", "run deleted"
    JUDGE_ENDPOINT_SAVED = "judge.endpoint", "judge endpoint changed"
    CLUSTER_SAVED = "cluster.saved", "cluster added or changed"
    SSO_LOGIN = "sso.login", "signed in with single sign-on"


class AuditEvent(models.Model):
    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE, related_name="audit_events")
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.CharField(max_length=200, help_text="user name, 'key drk_<prefix>' or 'operator' (a shell)")
    action = models.CharField(max_length=40, choices=Action.choices)
    target = models.CharField(max_length=300)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["project", "-at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"
