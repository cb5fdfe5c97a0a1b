from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from deeprepo_web.jobs.models import ClusterKind, Job, JobStatus
from deeprepo_web.jobs.services.dispatch import job_cancel_on_cluster
from deeprepo_web.jobs.services.launch import job_cancel

# Jobs that exist (or may) on the machine: a pending one is cancelled before it starts.
_LIVE = (JobStatus.PENDING, JobStatus.SUBMITTING, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING)


class Command(BaseCommand):
    help = ("Cancel the local-cluster jobs created since a time, killing their process groups (what "
            "`make run` started), and print what was stopped and what was left running.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--since", required=True, help="ISO time: jobs created at or after it")

    def handle(self, *args: Any, since: str, **options: Any) -> None:
        try:
            start = datetime.fromisoformat(since)
        except ValueError as exc:
            raise CommandError(f"--since: not an ISO time: {since!r}") from exc
        jobs = Job.objects.filter(cluster__kind=ClusterKind.LOCAL, created_at__gte=start,
                                  status__in=_LIVE).select_related("cluster")
        for job in jobs:
            job_cancel(job=job)
            # The worker may already be gone: cancel here (kills the job's process group) and sync.
            job_cancel_on_cluster(job_id=job.pk)
            job.refresh_from_db()
            if job.status in _LIVE:
                self.stdout.write(f"left running: job {job.public_id} ({job.name}) on {job.cluster.name}, "
                                  f"status {job.status}, pid in {job.external_id}")
            else:
                self.stdout.write(f"stopped job {job.public_id} ({job.name}): {job.status}")
