from __future__ import annotations

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "deeprepo_web.runs"
    label = "runs"

    def ready(self) -> None:
        from deeprepo_web.runs import signals  # noqa: F401  (a deleted run is audited, whoever deleted it)
