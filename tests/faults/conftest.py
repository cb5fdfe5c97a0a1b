"""Fixtures for fault tests that need a broker of their own: a throwaway Redis and a real
Celery worker on it, so a test may crash and restart them without touching anyone else's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.infra._proc import ServiceUnavailable
from tests.infra.fixtures import slurm_cluster  # noqa: F401  (fixture)
from tests.infra.redis import RedisServer, start_redis
from tests.jobs.conftest import local_cluster, probe_template, work  # noqa: F401  (fixtures)
from tests.jobs.worker import Worker, point_app_at, start_worker, stop_worker


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    try:
        server = start_redis()
    except ServiceUnavailable as e:
        pytest.skip(str(e))
    yield server
    server.stop()


@pytest.fixture
def start_own_worker(own_redis: RedisServer, transactional_db: Any) -> Iterator[Callable[..., Worker]]:
    """start(**env) -> a real worker (with beat) on own_redis; this process enqueues there too.
    Every worker started is stopped at the end, and the app is pointed back where it was."""
    from django.conf import settings

    from workers.celery import app

    previous = app.conf.broker_url
    started: list[Worker] = []

    def start(concurrency: int = 4, **env: str) -> Worker:
        worker = start_worker(str(settings.DATABASES["default"]["NAME"]), settings.SECRET_KEY,
                              concurrency=concurrency, extra_env=env, broker_url=own_redis.url,
                              flush=False)  # a second worker must find what the first left unacked
        started.append(worker)
        return worker

    point_app_at(own_redis.url)
    yield start
    for worker in started:
        stop_worker(worker)
    point_app_at(previous)
