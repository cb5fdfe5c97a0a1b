from __future__ import annotations

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "deeprepo_web.audit"
    label = "audit"

    def ready(self) -> None:
        from deeprepo_web.audit import signals  # noqa: F401  (a deleted run is recorded, whoever deleted it)
