"""Start work on a Celery worker by task name: the one way web code enqueues.

Web code never imports a task module, so arrows go one way (tasks -> services). Callers have
committed their rows before they enqueue, so a broker that is away (Redis restarting) must not fail
the request: `enqueue` says False, the caller notes it on its row, and a beat task sends it again.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from workers.celery import app

log = logging.getLogger(__name__)


def enqueue(name: str, *args: Any, countdown: float | None = None, queue: str | None = None,
            expires: float | None = None) -> bool:
    """Send task `name` with `args` (ids, never objects) to `queue` (default: the default queue).
    False, and a log line, if it was not queued."""
    try:
        _send(name, args, queue=queue, countdown=countdown, expires=expires)
    except Exception as exc:  # noqa: BLE001 - kombu/redis raise many types; all mean "not queued"
        log.warning("could not queue %s%r: %s: %s", name, args, exc.__class__.__name__, exc)
        return False
    return True


def enqueue_many(name: str, args_list: list[tuple[Any, ...]], *, queue: str | None = None) -> int:
    """Send task `name` once per args tuple over one broker connection (a sweep's chunk of jobs:
    one connection checkout, not one per message). Returns how many went, in order; the rest
    were not queued (the broker went away), with a log line."""
    sent = 0
    try:
        # Eager tasks run here and now: no broker connection to hold for them.
        with contextlib.nullcontext() if app.conf.task_always_eager else app.producer_or_acquire() as producer:
            for args in args_list:
                _send(name, args, queue=queue, producer=producer)
                sent += 1
    except Exception as exc:  # noqa: BLE001 - as enqueue: every kombu/redis error means "not queued"
        log.warning("could not queue %s for %d of %d: %s: %s", name, len(args_list) - sent, len(args_list),
                    exc.__class__.__name__, exc)
    return sent


def _send(name: str, args: tuple[Any, ...], **options: Any) -> None:
    """One task message, `options` as send_task takes them (queue, producer, countdown …). Raises
    what the broker raises."""
    if app.conf.task_always_eager:
        # send_task ignores CELERY_TASK_ALWAYS_EAGER; the setting means "run it here, now".
        app.tasks[name].apply(args=args)
    else:
        app.send_task(name, args=args, **options)
