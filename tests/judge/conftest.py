from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.judge.loopback import JudgeServer


@pytest.fixture
def judge_server(settings: Any) -> Iterator[JudgeServer]:
    # The stand-in judge listens on loopback, which the server refuses unless the operator allows it
    # (the session's Celery worker gets the same setting in tests/jobs/worker.py).
    settings.DEEPREPO_OUTBOUND_ALLOW = "127.0.0.1/32"
    server = JudgeServer(trigger="give up", api_key="sk-loopback-judge")
    yield server
    server.close()
