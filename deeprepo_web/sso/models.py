"""Which provider account a user signed in with. Users are found by (issuer, subject), never by e-mail:
an address the provider lets anyone set must not open a local account that has the same one."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class SsoIdentity(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity")
    issuer = models.CharField(max_length=300)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
