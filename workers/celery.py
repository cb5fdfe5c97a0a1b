"""The Celery app, configured from Django settings (namespace CELERY_)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")

app = Celery("deeprepo", include=["workers.tasks.artifacts", "workers.tasks.imports", "workers.tasks.jobs",
                                     "workers.tasks.search", "workers.tasks.judge", "workers.tasks.retention",
                                     "workers.tasks.sweeps", "workers.tasks.checkpoint_evals", "workers.tasks.runs",
                                     "workers.tasks.mlflow", "workers.tasks.otlp"])
app.config_from_object("django.conf:settings", namespace="CELERY")
