from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class JobsConfig(AppConfig):
    name = "deeprepo_web.jobs"
    label = "jobs"

    def ready(self) -> None:
        from deeprepo_web.jobs.signals import builtin_templates_after_migrate

        post_migrate.connect(builtin_templates_after_migrate, sender=self, dispatch_uid="jobs-builtin-templates")
