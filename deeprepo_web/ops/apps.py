from __future__ import annotations

from django.apps import AppConfig


class OpsConfig(AppConfig):
    name = "deeprepo_web.ops"
    label = "ops"
