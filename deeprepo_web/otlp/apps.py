from __future__ import annotations

from django.apps import AppConfig


class OtlpConfig(AppConfig):
    name = "deeprepo_web.otlp"
    label = "otlp"
    default_auto_field = "django.db.models.BigAutoField"
