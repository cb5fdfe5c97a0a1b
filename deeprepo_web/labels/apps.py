from __future__ import annotations

from django.apps import AppConfig


class LabelsConfig(AppConfig):
    name = "deeprepo_web.labels"
    label = "labels"

    def ready(self) -> None:
        from deeprepo_web.labels import signals  # noqa: F401  (connects the receivers)
