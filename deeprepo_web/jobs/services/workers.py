"""Which Celery workers listen on which queue: each worker says so every few seconds.

A cluster's jobs go to the cluster's queue (`Cluster.task_queue`). A queue nobody listens on
holds its messages until a worker starts there, so a job for such a cluster is not lost: it is
"waiting for a worker on <cluster>", and the pages say so instead of showing a stuck job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from deeprepo_web.jobs.models import WAIT_ERROR, Cluster, WorkerQueue
from deeprepo_web.jobs.services.errors import JobInputError

QUEUE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}")


def heartbeat_seconds() -> float:
    return float(settings.DEEPREPO_WORKER_HEARTBEAT_SECONDS)


def queue_clean(value: str) -> str:
    """A cluster's queue as typed: "" (the default queue) or a Celery queue name."""
    value = (value or "").strip()
    if value and not QUEUE_NAME.fullmatch(value):
        raise JobInputError("queue", "letters, digits, '_', '.', '-' only (at most 100), e.g. gpu-a100")
    return value


def worker_seen(*, hostname: str, queues: Iterable[str]) -> None:
    """Record that `hostname` listens on `queues` now (one upsert per queue)."""
    now = timezone.now()
    for queue in queues:
        WorkerQueue.objects.update_or_create(hostname=hostname[:200], queue=queue[:100],
                                             defaults={"seen_at": now})


def worker_gone(*, hostname: str) -> None:
    """A worker shutting down: its queues stop counting at once, not after the rows age out."""
    WorkerQueue.objects.filter(hostname=hostname[:200]).delete()


def queues_live() -> dict[str, list[str]]:
    """Queue -> hostnames of workers that said they listen on it within three heartbeats."""
    since = timezone.now() - timedelta(seconds=3 * heartbeat_seconds())
    out: dict[str, list[str]] = {}
    for hostname, queue in WorkerQueue.objects.filter(seen_at__gte=since).values_list("hostname", "queue"):
        out.setdefault(queue, []).append(hostname)
    return out


def queue_is_live(queue: str) -> bool:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return True  # tasks run in the caller's process: there is always "a worker"
    since = timezone.now() - timedelta(seconds=3 * heartbeat_seconds())
    return WorkerQueue.objects.filter(queue=queue, seen_at__gte=since).exists()


def waiting_message(cluster: Cluster) -> str:
    return f"{WAIT_ERROR} {cluster.name} (no worker listens on queue {cluster.task_queue!r})"
