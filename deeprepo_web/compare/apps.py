from __future__ import annotations

from django.apps import AppConfig


class CompareConfig(AppConfig):
    name = "deeprepo_web.compare"
    label = "compare"
