from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from deeprepo_web.jobs.selectors import local_queues


class Command(BaseCommand):
    help = ("Print the Celery queues a worker on this machine serves, comma separated: the default "
            "queue and every local cluster's queue (what `make run` passes to its worker's -Q).")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(",".join(local_queues()))
