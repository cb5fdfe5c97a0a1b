from __future__ import annotations

from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "deeprepo_web.judge"
    label = "judge"
