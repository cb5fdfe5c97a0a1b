from __future__ import annotations

import re
from typing import Any

import pytest

from tests.compare.seed002 import seed_002


@pytest.fixture
def seeded(team: Any) -> dict[str, Any]:
    return seed_002(team.project)


@pytest.fixture
def three(seeded: dict[str, Any]) -> list[Any]:
    return [seeded["Qwen3-8B (untrained)"], seeded["Qwen3-30B-A3B (untrained)"],
            seeded["Qwen3-30B-A3B (GRPO trained)"]]


def page_text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
