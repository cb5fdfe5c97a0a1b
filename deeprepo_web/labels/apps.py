from __future__ import annotations

from django.apps import AppConfig


class LabelsConfig(AppConfig):
    name = "deeprepo_web.labels"
    label = "labels"
