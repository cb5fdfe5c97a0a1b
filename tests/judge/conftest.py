from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.judge.loopback import JudgeServer


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    server = JudgeServer(trigger="give up", api_key="sk-loopback-judge")
    yield server
    server.close()
