"""Fixtures for the format parser tests: where the real sample files are, and event helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deeprepo_client.formats import parse
from deeprepo_client.records import Event, MetricsEvent, Problem, RewardsEvent, RolloutsEvent, RunEvent

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def samples() -> Path:
    """The real sample files: $DEEPREPO_SAMPLES or <repo root>/../shared/samples."""
    env = os.environ.get("DEEPREPO_SAMPLES")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "samples"
    if not path.is_dir():
        pytest.skip(f"real sample files not found at {path} (set DEEPREPO_SAMPLES)")
    return path


class Parsed:
    """All events of one parse() call, split by kind."""

    def __init__(self, events: list[Event]):
        self.events = events
        self.runs = [e for e in events if isinstance(e, RunEvent)]
        self.rollouts = [r for e in events if isinstance(e, RolloutsEvent) for r in e.rollouts]
        self.points = [p for e in events if isinstance(e, MetricsEvent) for p in e.points]
        self.rewards = {k: v for e in events if isinstance(e, RewardsEvent) for k, v in e.by_example.items()}
        self.problems = [e for e in events if isinstance(e, Problem)]

    @property
    def run(self):
        assert self.runs, "no RunEvent"
        return self.runs[0].run

    def by_key(self, key: str) -> list:
        return [r for r in self.rollouts if r["example_key"] == key]


def run_parse(path, **kw) -> Parsed:
    return Parsed(list(parse(path, **kw)))


@pytest.fixture
def parsed():
    return run_parse
