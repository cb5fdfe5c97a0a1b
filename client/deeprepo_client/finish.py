"""What `Run.finish()` reports: a summary of what the server took, and a progress line while it waits."""

from __future__ import annotations

import sys
import time
from typing import Any

from deeprepo_client.spool import Spool

PROGRESS_AFTER = 3.0  # seconds of waiting before a progress line appears


class FinishSummary(dict[str, Any]):
    """{"ok", "sent_batches", "points", "rollouts", "refused": [error lines], "spooled", "spool"}.

    True when everything logged is on the server (so `if run.finish():` reads as before); a dict,
    so it prints and serialises as what it holds.
    """

    def __init__(self, *, sent_batches: int, points: int, rollouts: int, refused: list[str], spooled: int,
                 spool: str) -> None:
        super().__init__(ok=not refused and not spooled, sent_batches=sent_batches, points=points,
                         rollouts=rollouts, refused=refused, spooled=spooled, spool=spool)

    def __bool__(self) -> bool:
        return bool(self["ok"])

    @property
    def ok(self) -> bool:
        return bool(self["ok"])

    @property
    def refused(self) -> list[str]:
        return list(self["refused"])

    @property
    def spooled(self) -> int:
        return int(self["spooled"])

    def warning(self, last_error: str | None) -> str:
        """What went wrong, where the data is, and the command that sends it."""
        parts = []
        if self.refused:
            lines = "; ".join(self.refused[:3]) + (f"; and {len(self.refused) - 3} more" if len(self.refused) > 3 else "")
            parts.append(f"the server refused {len(self.refused)} batch(es) ({lines}); they are kept in "
                         f"{self['spool']}/rejected.jsonl")
        if self.spooled:
            why = f" ({last_error})" if last_error else ""
            parts.append(f"{self.spooled} batch(es) were not sent{why} and are kept in {self['spool']}")
        path = self["spool"]
        how = []
        if self.spooled:
            how.append(f"send what is left with `deeprepo sync {path}`")
        if self.refused:
            how.append(f"send the refused ones again, once their cause is fixed, with `deeprepo sync --refused {path}`")
        return "; ".join(parts) + ". " + "; ".join(how)


class Progress:
    """A tqdm-like line on stderr while finish() waits: redrawn in place on a terminal, else every 10 s."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.total = max(1, spool.pending_bytes())
        self.tty = sys.stderr.isatty()
        self.shown = False
        self.last = 0.0

    def show(self, elapsed: float) -> None:
        now = time.monotonic()
        if elapsed < PROGRESS_AFTER or now - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = now
        left = self.spool.pending_bytes()
        self.total = max(self.total, left)
        done = self.total - left
        frac = done / self.total
        bar = "#" * int(frac * 20) + "-" * (20 - int(frac * 20))
        line = (f"deeprepo: sending |{bar}| {done / 1e6:.1f}/{self.total / 1e6:.1f} MB, "
                f"{self.spool.pending()} batch(es) left, {elapsed:.0f} s")
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            print(file=sys.stderr, flush=True)
