from __future__ import annotations

import hashlib
import secrets
import string

from django.conf import settings
from django.db import models
from django.utils import timezone


class Project(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.slug


class Role(models.TextChoices):
    VIEWER = "viewer"
    EDITOR = "editor"
    ADMIN = "admin"


ROLE_RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.ADMIN: 3}


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="membership_unique")]

    def allows(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


_KEY_ALPHABET = string.ascii_letters + string.digits


class ApiKey(models.Model):
    """A project-scoped key. Only the sha256 of the secret is stored; the secret is shown once."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    name = models.CharField(max_length=200, default="")
    prefix = models.CharField(max_length=16)
    secret_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)  # ["ingest", "read"]; empty list = all
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"drk_{self.prefix}…"

    @classmethod
    def generate(cls) -> tuple[str, str, str]:
        """Returns (full secret, prefix, hash)."""
        prefix = secrets.token_hex(4)
        # `drk_<prefix>-<40 letters and digits>`: the W&B SDK checks a key's shape before it sends it
        # (after the first '-': exactly 40 characters in 0.17-0.21, 40 or more of [A-Za-z0-9_-] since),
        # so a WANDB_API_KEY set to a deeprepo key passes every version. Older keys keep working here.
        body = "".join(secrets.choice(_KEY_ALPHABET) for _ in range(40))
        secret = f"drk_{prefix}-{body}"
        return secret, prefix, hash_key(secret)

    @property
    def is_active(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

