"""Model text rendered by threads of one web worker at the same time stays each page's own.

A single Markdown converter shared by the process mixed two texts converted at once: with the
interpreter switching threads often, every thread got paragraphs of the others (another user's
trajectory in your page). Real threads, no mocks.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from deeprepo_web.trajectories.richtext import markdown_html

THREADS, ROUNDS = 8, 100


@pytest.fixture
def fast_thread_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, so a shared state shows
    yield
    sys.setswitchinterval(before)


def _text(i: int) -> str:
    return f"# Trajectory {i}\n\n" + "\n\n".join(f"Step {i}-{k}: ran `tool {i}` and *read* {i}." for k in range(20))


def test_concurrent_markdown_renders_do_not_mix(fast_thread_switches: None) -> None:
    expected = {i: str(markdown_html(_text(i))) for i in range(THREADS)}
    wrong: list[str] = []

    def render(i: int) -> None:
        for _ in range(ROUNDS):
            out = str(markdown_html(_text(i)))
            if out != expected[i]:
                wrong.append(f"thread {i} got: {out[:120]!r}")
                return

    threads = [threading.Thread(target=render, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not wrong, wrong[:3]
