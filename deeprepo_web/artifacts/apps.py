from __future__ import annotations

from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    name = "deeprepo_web.artifacts"
    label = "artifacts"
