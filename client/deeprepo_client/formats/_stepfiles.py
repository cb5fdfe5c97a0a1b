"""Reading one step's dump file whole (its groups need every row), and leaving a file being written.

Frameworks write a step's file in one go at the end of the step (verl, NeMo-RL, SkyRL) or append a
task's lines (AReaL). A group's advantage needs all of its rows, so in watch mode (partial_ok) a
file that does not end in a newline, or changed in the last moments, is left for the next pass
rather than read half; an import reads what is there and says where it was cut.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import Problem
from ._json import iter_jsonl

SETTLE_SECONDS = 2.0  # a file younger than this may still be growing


@dataclass
class Ledger:
    """Step files `deeprepo watch` already sent whole: a pass skips them while they stay unchanged,
    so following a run of a thousand steps costs the new step, not all of them again."""

    done: dict[str, list[float]] = field(default_factory=dict)  # path -> [size, mtime] when sent
    read: dict[str, list[float]] = field(default_factory=dict)  # read whole during this pass


LEDGER: ContextVar[Ledger | None] = ContextVar("deeprepo_step_ledger", default=None)


def _signature(path: Path) -> list[float] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [float(st.st_size), st.st_mtime]


def already_sent(path: Path) -> bool:
    """True when the watcher sent this file whole and it has not changed since (never outside watch)."""
    ledger = LEDGER.get()
    return ledger is not None and ledger.done.get(str(path)) == _signature(path)


def read_whole(path: Path) -> None:
    """Note that this pass read the file whole (the watcher marks it sent once its rows are spooled)."""
    ledger = LEDGER.get()
    sig = _signature(path)
    if ledger is not None and sig is not None:
        ledger.read[str(path)] = sig


def still_written(path: Path) -> bool:
    """True when the file looks unfinished: no final newline, or modified within SETTLE_SECONDS."""
    try:
        st = path.stat()
        if st.st_size == 0 or time.time() - st.st_mtime < SETTLE_SECONDS:
            return True
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:
        return True


def read_rows(path: Path, *, partial_ok: bool, display: str | None = None) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """(line number, object) for every object line of `path`, and the Problems of the others.

    Returns nothing when partial_ok and the file is still being written (read it next pass).
    """
    if already_sent(path) or (partial_ok and still_written(path)):
        return [], []
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    name = display or str(path)
    for item in iter_jsonl(path, partial_ok=False, display=name):
        if isinstance(item, Problem):
            problems.append(item)
            continue
        lineno, obj = item
        if isinstance(obj, dict):
            rows.append((lineno, obj))
        else:
            problems.append(Problem(name, lineno, f"expected a JSON object, found {type(obj).__name__}"))
    read_whole(path)
    return rows, problems


def file_times(paths: list[Path]) -> dict[str, float]:
    """started_at / finished_at of a run from the files it wrote (oldest and newest modification):
    dumps carry no clock of their own, and the import's time would make every run a few seconds long."""
    times = []
    for p in paths:
        try:
            times.append(p.stat().st_mtime)
        except OSError:
            continue
    return {"started_at": min(times), "finished_at": max(times)} if times else {}
