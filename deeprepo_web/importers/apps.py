from __future__ import annotations

from django.apps import AppConfig


class ImportersConfig(AppConfig):
    name = "deeprepo_web.importers"
    label = "importers"
    default_auto_field = "django.db.models.BigAutoField"
