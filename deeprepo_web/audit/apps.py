from __future__ import annotations

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "deeprepo_web.audit"
    label = "audit"
