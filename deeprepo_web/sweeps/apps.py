from __future__ import annotations

from django.apps import AppConfig


class SweepsConfig(AppConfig):
    name = "deeprepo_web.sweeps"
    label = "sweeps"
