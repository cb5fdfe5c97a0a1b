from __future__ import annotations

from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    name = "deeprepo_web.explorer"
    label = "explorer"
