from __future__ import annotations

from django.apps import AppConfig


class MlflowServerConfig(AppConfig):
    name = "deeprepo_web.mlflow_server"
    label = "mlflow_server"
    default_auto_field = "django.db.models.BigAutoField"
