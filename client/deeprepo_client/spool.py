"""The on-disk write-ahead log of a run: every batch is written here before it is sent.

Layout of one run's spool directory:
    run.json    {"local_id", "create": {...payload of POST /runs...}, "server_id": str | null}
    ops.jsonl   one op a line: {"seq", "kind": "metrics" | "rollouts" | "update" | "finish", "body"}
    acked       the highest seq the server has accepted (ops are idempotent, so a crash between
                sending and writing this only re-sends)
    rejected.jsonl  ops the server refused for good, with its error line (kept, never dropped silently)

A torn last line (crash or full disk mid-write) is ignored by readers and cut off by writers.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class SpoolError(OSError):
    """The spool could not be written (disk full, permissions); what was there is intact."""


def default_root() -> Path:
    return Path(os.environ.get("DEEPREPO_SPOOL_DIR") or Path.home() / ".deeprepo" / "spool")


class Spool:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._ops = path / "ops.jsonl"
        self._next_seq = self._scan_last_seq() + 1

    # ------------------------------------------------------------ run record

    @classmethod
    def create(cls, root: Path, local_id: str, create: dict[str, Any], server_id: str | None) -> Spool:
        path = root / local_id
        path.mkdir(parents=True, exist_ok=True)
        spool = cls(path)
        if not (path / "run.json").exists():
            spool.write_meta({"local_id": local_id, "create": create, "server_id": server_id})
        return spool

    def read_meta(self) -> dict[str, Any]:
        return json.loads((self.path / "run.json").read_text())

    def write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.path / "run.json.tmp"
        try:
            tmp.write_text(json.dumps(meta))
            os.replace(tmp, self.path / "run.json")
        except OSError as exc:
            raise SpoolError(f"cannot write {self.path / 'run.json'}: {exc}") from exc

    # ------------------------------------------------------------ ops

    def _scan_last_seq(self) -> int:
        last = 0
        for op in self.iter_ops(after=0):
            last = op["seq"]
        return last

    def append(self, kind: str, body: Any) -> int:
        with self._lock:
            seq = self._next_seq
            line = (json.dumps({"seq": seq, "kind": kind, "body": body}, allow_nan=True) + "\n").encode()
            size = self._ops.stat().st_size if self._ops.exists() else 0
            try:
                with open(self._ops, "ab") as fh:
                    fh.write(line)
                    fh.flush()
            except OSError as exc:
                # Cut a torn write back so the log stays a sequence of whole lines.
                try:
                    os.truncate(self._ops, size)
                except OSError:
                    pass
                raise SpoolError(f"cannot write to the spool {self._ops}: {exc.strerror or exc}") from exc
            self._next_seq += 1
            return seq

    def iter_ops(self, after: int) -> Iterator[dict[str, Any]]:
        if not self._ops.exists():
            return
        with open(self._ops, "rb") as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    return  # torn tail: never acknowledged, never half-sent
                try:
                    op = json.loads(raw)
                except ValueError:
                    continue
                if op.get("seq", 0) > after:
                    yield op

    def acked(self) -> int:
        try:
            return int((self.path / "acked").read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def ack(self, seq: int) -> None:
        tmp = self.path / "acked.tmp"
        try:
            tmp.write_text(str(seq))
            os.replace(tmp, self.path / "acked")
        except OSError as exc:
            raise SpoolError(f"cannot write {self.path / 'acked'}: {exc}") from exc

    def reject(self, op: dict[str, Any], error: str) -> None:
        with open(self.path / "rejected.jsonl", "a") as fh:
            fh.write(json.dumps({"op": op, "error": error}) + "\n")

    def pending(self) -> int:
        return self._next_seq - 1 - self.acked()


def spool_dirs(path: Path) -> list[Path]:
    """A run's spool directory itself, or every run directory below a spool root."""
    if (path / "run.json").exists():
        return [path]
    return sorted(p for p in path.iterdir() if (p / "run.json").exists()) if path.is_dir() else []
