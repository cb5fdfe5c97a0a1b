from __future__ import annotations

from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "deeprepo_web.jobs"
    label = "jobs"
