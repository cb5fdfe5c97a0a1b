"""Shared pieces of the backend tests: the probe command, hostile inputs, polling."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workers.backends import Backend, JobState, JobStatus

PROBE = str(Path(__file__).with_name("probe.py"))
# The system interpreter: readable by the SSH test user, unlike root's pyenv / the venv.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
POLL = 0.2


def hostile_values(canary: Path) -> list[str]:
    """Strings that would run code, split words or expand if they ever met a shell unquoted."""
    return [
        "; rm -rf ~",
        f"$(touch {canary})",
        f"`touch {canary}`",
        f"x && touch {canary}",
        f"| touch {canary}",
        "line one\nline two",
        "it's a \"quoted\" 'value'",
        "$HOME ${PATH} $$ $1",
        "* ? [a-z]",
        "--partition=evil",
        "back\\slash\\n",
        "tab\there",
        "%j %u %x",
        "",
        "  leading and trailing  ",
        "ünïcødé ☃",
    ]


def probe_command(args: Iterable[str]) -> str:
    """What the dispatcher does: a template filled with shlex.quote'd parameters."""
    return shlex.join([PYTHON, PROBE, *args])


def probe_env(out: Path, *, sleep: float = 0, exit_code: int = 0, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PROBE_OUT": str(out), "PROBE_SLEEP": str(sleep), "PROBE_EXIT": str(exit_code),
           "DEEPREPO_URL": "http://127.0.0.1:8000", "DEEPREPO_API_KEY": "drk_test_secret",
           "DEEPREPO_RUN_ID": "run123"}
    env.update(extra or {})
    return env


def wait_state(backend: Backend, external_id: str, states: set[JobState], timeout: float = 30) -> JobStatus:
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        status = backend.state(external_id)
        if not seen or seen[-1] != status.state:
            seen.append(status.state)
        if status.state in states:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"job {external_id} never reached {states}; saw {seen}, last {status}")
        time.sleep(POLL)


def wait_file(path: Path, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(POLL)
    return dict(json.loads(path.read_text()))


def shared_dir(base: Path) -> Path:
    """A directory every user (the SSH test user included) can write to."""
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o1777)
    return base
