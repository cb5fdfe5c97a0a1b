from __future__ import annotations

from django.apps import AppConfig


class CheckpointEvalsConfig(AppConfig):
    name = "deeprepo_web.checkpoint_evals"
    label = "checkpoint_evals"
