from __future__ import annotations

from django.apps import AppConfig


class WandbServerConfig(AppConfig):
    name = "deeprepo_web.wandb_server"
    label = "wandb_server"
    default_auto_field = "django.db.models.BigAutoField"
