from __future__ import annotations

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "deeprepo_web.runs"
    label = "runs"
