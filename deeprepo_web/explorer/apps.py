from __future__ import annotations

from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    name = "deeprepo_web.explorer"
    label = "explorer"

    def ready(self) -> None:
        from deeprepo_web.explorer import signals  # noqa: F401  (connects the receivers)
