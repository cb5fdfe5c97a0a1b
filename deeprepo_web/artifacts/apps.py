from __future__ import annotations

from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    name = "deeprepo_web.artifacts"
    label = "artifacts"

    def ready(self) -> None:
        from deeprepo_web.artifacts import signals  # noqa: F401  (connects the receivers)
