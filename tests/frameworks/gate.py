"""The framework scripts' hold: after step `hold_at`, wait until the test creates the gate file."""

from __future__ import annotations

import time
from pathlib import Path


def hold(step: int, hold_at: int | None, gate: str | Path | None, timeout: float = 600) -> None:
    if hold_at is None or gate is None or step != hold_at:
        return
    deadline = time.monotonic() + timeout
    while not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
