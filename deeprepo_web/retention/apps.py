from __future__ import annotations

from django.apps import AppConfig


class RetentionConfig(AppConfig):
    name = "deeprepo_web.retention"
    label = "retention"
