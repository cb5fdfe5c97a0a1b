from __future__ import annotations

from django.apps import AppConfig


class TrajectoriesConfig(AppConfig):
    name = "deeprepo_web.trajectories"
    label = "trajectories"
