"""The on-disk write-ahead log of a run: every batch is written here before it is sent.

Layout of one run's spool directory:
    run.json    {"local_id", "create": {...payload of POST /runs...}, "server_id": str | null}
    ops-NNNNNN.jsonl  segments of ops, one op a line: {"seq", "kind": "metrics" | "rollouts" |
                "update" | "finish", "body"}; a new segment starts past SEGMENT_BYTES, and a
                segment whose ops are all acknowledged is deleted (`ops.jsonl` of older clients
                is read as segment 0)
    acked       {"seq", "segment", "offset"}: the highest seq the server has accepted and where the
                first op after it starts, so a wake-up reads only what is new (ops are idempotent,
                so a crash between sending and writing this only re-sends)
    rejected.jsonl  ops the server refused for good, with its error line (kept, never dropped silently)

A torn last line (crash or full disk mid-write) is ignored by readers and cut off by writers.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEGMENT_BYTES = 64 * 1024 * 1024
_SEGMENT = re.compile(r"ops-(\d{6})\.jsonl")
# The header this module writes before an op's body; older spools (json.dumps) put spaces in it.
_HEADER = re.compile(rb'\{"seq": ?(\d+), ?"kind": ?"(\w+)", ?"body": ?')


class SpoolError(OSError):
    """The spool could not be written (disk full, permissions); what was there is intact."""


def default_root() -> Path:
    return Path(os.environ.get("DEEPREPO_SPOOL_DIR") or Path.home() / ".deeprepo" / "spool")


@dataclass(frozen=True, order=True)
class Cursor:
    """A place in the log: a segment and a byte offset in it."""

    segment: int = 0
    offset: int = 0


@dataclass
class RawOp:
    """One op as read back: its body stays the JSON bytes that were written (sent as they are)."""

    seq: int
    kind: str
    body: bytes
    end: Cursor  # where the next op starts

    def decoded(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "body": json.loads(self.body)}


def encode_line(seq: int, kind: str, body: bytes) -> bytes:
    return b'{"seq":%d,"kind":"%s","body":' % (seq, kind.encode()) + body + b"}\n"


def _parse_line(line: bytes, end: Cursor) -> RawOp | None:
    m = _HEADER.match(line)
    if m is not None and line.endswith(b"}\n"):
        return RawOp(int(m.group(1)), m.group(2).decode(), line[m.end():-2], end)
    try:  # written by something else: decode it whole
        op = json.loads(line)
        return RawOp(int(op["seq"]), str(op["kind"]), json.dumps(op["body"], allow_nan=True).encode(), end)
    except (ValueError, KeyError, TypeError):
        return None


class Spool:
    def __init__(self, path: Path, segment_bytes: int = SEGMENT_BYTES) -> None:
        self.path = path
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()
        segments = self.segments()
        self._segment = segments[-1] if segments else 1
        self._size = self._file(self._segment).stat().st_size if segments else 0
        self._tail_checked = False
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

    # ------------------------------------------------------------ segments

    def _file(self, segment: int) -> Path:
        return self.path / ("ops.jsonl" if segment == 0 else f"ops-{segment:06d}.jsonl")

    def segments(self) -> list[int]:
        if not self.path.is_dir():
            return []
        found = [int(m.group(1)) for p in self.path.iterdir() if (m := _SEGMENT.fullmatch(p.name))]
        if (self.path / "ops.jsonl").exists():
            found.append(0)
        return sorted(found)

    def _scan_last_seq(self) -> int:
        last = self.acked()
        segments = self.segments()
        if segments:  # seqs only grow: the last segment holds the last one
            start = self.acked_cursor() if self.acked_cursor().segment == segments[-1] else Cursor(segments[-1])
            for op in self.read(start, max_bytes=None):
                last = op.seq
        return last

    # ------------------------------------------------------------ ops

    def append(self, kind: str, body: Any) -> int:
        """Append an op whose body is any JSON value (encoded here, NaN kept)."""
        return self.append_raw(kind, json.dumps(body, allow_nan=True).encode())

    def append_raw(self, kind: str, body: bytes) -> int:
        """Append an op whose body is already JSON bytes (one line: no raw newline in it)."""
        with self._lock:
            seq = self._next_seq
            line = encode_line(seq, kind, body)
            if not self._tail_checked:
                self._cut_torn_tail()
            if self._size and self._size + len(line) > self.segment_bytes:
                self._segment, self._size = self._segment + 1, 0
            target = self._file(self._segment)
            try:
                with open(target, "ab") as fh:
                    fh.write(line)
            except OSError as exc:
                # Cut a torn write back so the log stays a sequence of whole lines.
                try:
                    os.truncate(target, self._size)
                except OSError:
                    pass
                raise SpoolError(f"cannot write to the spool {target}: {exc.strerror or exc}") from exc
            self._size += len(line)
            self._next_seq += 1
            return seq

    def _cut_torn_tail(self) -> None:
        """A crash mid-write left a partial last line: cut it before appending, or the next op
        would be glued to it (once per process, before its first append)."""
        self._tail_checked = True
        if not self._size:
            return
        path = self._file(self._segment)
        with open(path, "rb") as fh:
            start = max(0, self._size - 1024 * 1024)
            fh.seek(start)
            tail = fh.read()
        if tail.endswith(b"\n"):
            return
        cut = tail.rfind(b"\n")
        keep = start + cut + 1 if cut >= 0 else (0 if start == 0 else self._size)
        if keep != self._size:
            os.truncate(path, keep)
            self._size = keep

    def read(self, start: Cursor, max_bytes: int | None = 8 * 1024 * 1024) -> Iterator[RawOp]:
        """Whole ops from `start` on (about max_bytes of them), across segments; stops at a torn tail."""
        taken = 0
        for segment in self.segments():
            if segment < start.segment:
                continue
            offset = start.offset if segment == start.segment else 0
            try:
                fh = open(self._file(segment), "rb")
            except FileNotFoundError:
                continue  # acknowledged and deleted meanwhile
            with fh:
                fh.seek(offset)
                for line in fh:
                    if not line.endswith(b"\n"):
                        return  # torn tail: never acknowledged, never half-sent
                    offset += len(line)
                    op = _parse_line(line, Cursor(segment, offset))
                    if op is None:
                        continue
                    yield op
                    taken += len(line)
                    if max_bytes is not None and taken >= max_bytes:
                        return

    def iter_ops(self, after: int) -> Iterator[dict[str, Any]]:
        """Decoded ops with seq > after (for tools and tests; the sender reads raw ops)."""
        for op in self.read(Cursor(), max_bytes=None):
            if op.seq > after:
                yield op.decoded()

    def acked(self) -> int:
        return self._acked_state()[0]

    def acked_cursor(self) -> Cursor:
        return self._acked_state()[1]

    def _acked_state(self) -> tuple[int, Cursor]:
        try:
            text = (self.path / "acked").read_text().strip()
        except FileNotFoundError:
            return 0, Cursor()
        try:
            data = json.loads(text or "0")
        except ValueError:
            return 0, Cursor()
        if isinstance(data, int):  # an older client's spool: the seq alone, read from the start
            return data, Cursor()
        return int(data["seq"]), Cursor(int(data["segment"]), int(data["offset"]))

    def ack(self, seq: int, end: Cursor | None = None) -> None:
        """Record that every op up to `seq` (ending at `end`) is on the server; drop finished segments."""
        end = end or Cursor()
        tmp = self.path / "acked.tmp"
        try:
            tmp.write_text(json.dumps({"seq": seq, "segment": end.segment, "offset": end.offset}))
            os.replace(tmp, self.path / "acked")
        except OSError as exc:
            raise SpoolError(f"cannot write {self.path / 'acked'}: {exc}") from exc
        if end.segment:
            for segment in self.segments():
                if segment < end.segment:
                    self._file(segment).unlink(missing_ok=True)

    def reject(self, op: dict[str, Any], error: str) -> None:
        with open(self.path / "rejected.jsonl", "a") as fh:
            fh.write(json.dumps({"op": op, "error": error}, allow_nan=True) + "\n")

    def rejected(self) -> list[dict[str, Any]]:
        try:
            lines = (self.path / "rejected.jsonl").read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def requeue_rejected(self) -> int:
        """Append the refused ops again (new seqs) and empty rejected.jsonl; returns how many."""
        entries = self.rejected()
        for entry in entries:
            self.append(entry["op"]["kind"], entry["op"]["body"])
        (self.path / "rejected.jsonl").unlink(missing_ok=True)
        return len(entries)

    def pending(self) -> int:
        return self._next_seq - 1 - self.acked()

    def pending_bytes(self) -> int:
        """Bytes of ops not yet acknowledged (for progress)."""
        cursor = self.acked_cursor()
        total = 0
        for segment in self.segments():
            if segment < cursor.segment:
                continue
            try:
                size = self._file(segment).stat().st_size
            except FileNotFoundError:
                continue
            total += size - (cursor.offset if segment == cursor.segment else 0)
        return max(0, total)


def spool_dirs(path: Path) -> list[Path]:
    """A run's spool directory itself, or every run directory below a spool root."""
    if (path / "run.json").exists():
        return [path]
    return sorted(p for p in path.iterdir() if (p / "run.json").exists()) if path.is_dir() else []
