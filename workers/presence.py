"""A worker says which queues it listens on: at start, every heartbeat, and at shutdown.

Runs in the worker's main process (not its pool children) on a daemon thread, so a long task
never delays it; each beat is one upsert per queue through the jobs service.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from celery import signals

log = logging.getLogger(__name__)
_stop = threading.Event()


def _queues(consumer: Any) -> list[str]:
    return sorted(consumer.app.amqp.queues.consume_from.keys())


def _beat(hostname: str, queues: list[str]) -> None:
    from django.db import connection

    from deeprepo_web.jobs.services.workers import heartbeat_seconds, worker_seen

    while True:
        try:
            worker_seen(hostname=hostname, queues=queues)
        except Exception:  # noqa: BLE001 - the database may be restarting; say so and beat again
            log.warning("could not record this worker's queues", exc_info=True)
        finally:
            connection.close()  # this thread's own connection; never held between beats
        if _stop.wait(heartbeat_seconds()):
            return


@signals.worker_ready.connect
def _on_ready(sender: Any = None, **_: Any) -> None:
    hostname, queues = str(sender.hostname), _queues(sender)
    _stop.clear()
    threading.Thread(target=_beat, args=(hostname, queues), name="deeprepo-presence", daemon=True).start()


@signals.worker_shutdown.connect
def _on_shutdown(sender: Any = None, **_: Any) -> None:
    from django.db import connection

    from deeprepo_web.jobs.services.workers import worker_gone

    _stop.set()
    with contextlib.suppress(Exception):
        worker_gone(hostname=str(sender.hostname))
        connection.close()
