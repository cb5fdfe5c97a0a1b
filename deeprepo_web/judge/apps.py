from __future__ import annotations

from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "deeprepo_web.judge"
    label = "judge"

    def ready(self) -> None:
        from deeprepo_web.judge import signals  # noqa: F401  (connects the receivers)
