"""Helpers shared by the format parsers: JSON lines, batching, ids, numbers, chat messages, zips."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from ..records import (
    Event,
    MetricPoint,
    MetricsEvent,
    Problem,
    RolloutRecord,
    RolloutsEvent,
    ToolCallRecord,
    TurnRecord,
)

ROLLOUT_BATCH = 500
POINT_BATCH = 5000  # metric values (not points) per MetricsEvent, so wide rows stay bounded too

LFS_PREFIX = b"version https://git-lfs.github.com/spec/"

_orjson: ModuleType | None
try:
    import orjson as _orjson
except ImportError:  # optional (deeprepo-client[fast]): it only makes big files parse faster
    _orjson = None


# orjson reads integers past 64 bits as floats where json keeps them exact, so text with a run of
# 19 digits goes to json. Found by mapping digits to "0" and the rest to " ": a regex took longer
# than the decoding it guards.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def loads(data: str | bytes) -> Any:
    """json.loads, about twice as fast where orjson is installed.

    orjson takes strict JSON only; what it refuses (NaN, Infinity, lone surrogates, bad lines) goes
    to json, so values and error messages are json's.
    """
    if _orjson is not None:
        raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
        if raw.translate(_DIGITS).find(_LONG_RUN) < 0:
            try:
                return _orjson.loads(raw)
            except _orjson.JSONDecodeError:
                pass
    return json.loads(data)


# ---------------------------------------------------------------- ids and numbers


def short_hash(*parts: Any, n: int = 16) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")  # separator so ("ab","c") != ("a","bc")
    return h.hexdigest()[:n]


def file_digest(path: str | Path, limit: int = 1 << 20, first_line: bool = False) -> str:
    """Hash of a file's head: a content identity that survives renames and re-uploads.

    first_line=True hashes only the first line, which stays fixed while a JSONL file grows.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.readline(limit) if first_line else f.read(limit))
    return h.hexdigest()[:16]


def num(v: Any) -> float | None:
    """A float, or None for anything that is not a finite number (bools count as numbers)."""
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, int | float):
        f = float(v)
        return f if f == f and f not in (float("inf"), float("-inf")) else None
    return None


def tokens(v: Any) -> int | None:
    """Token counts: 0 or missing means unknown (records.py contract)."""
    f = num(v)
    if f is None or isinstance(v, bool) or f <= 0:
        return None
    return int(f)


def maybe_json(v: Any) -> Any:
    """Decode a JSON-encoded string field; leave anything else (or undecodable text) as it is."""
    if isinstance(v, str):
        s = v.strip()
        if s[:1] in ("{", "[", '"') or s in ("null", "true", "false"):
            try:
                return loads(s)
            except ValueError:
                return v
    return v


def parse_time(v: Any) -> float | None:
    """Unix seconds from a number or an ISO-ish timestamp string."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v:
        s = v.strip().replace("Z", "+00:00")
        try:
            return datetime.fromisoformat(s).timestamp()
        except ValueError:
            return None
    return None


def err_text(v: Any) -> str | None:
    if v is None or v == "" or v is False:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        msg = v.get("message") or v.get("error") or v.get("detail")
        kind = v.get("type") or v.get("error_type") or v.get("name")
        if msg:
            return f"{kind}: {msg}" if kind else str(msg)
    return json.dumps(v, default=str)[:10000]


# ---------------------------------------------------------------- JSON lines


def iter_jsonl(path: str | Path, *, partial_ok: bool = False, display: str | None = None) -> Iterator[tuple[int, Any] | Problem]:
    """Yield (line_number, object) per line, or a Problem for a line that does not parse.

    A last line without a newline that does not parse is a write in progress: silent when
    partial_ok (watch mode), a 'truncated' Problem otherwise.
    """
    name = display or str(path)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                yield lineno, loads(raw)
            except ValueError as e:
                if not raw.endswith(b"\n"):
                    if not partial_ok:
                        yield Problem(name, lineno, f"truncated last line ({len(raw)} bytes): {e}")
                    return
                yield Problem(name, lineno, f"invalid JSON: {e}")


def load_json(path: str | Path, display: str | None = None) -> tuple[Any, Problem | None]:
    try:
        with open(path, "rb") as f:
            return loads(f.read()), None
    except (OSError, ValueError) as e:
        return None, Problem(display or str(path), None, f"unreadable JSON: {e}")


# ---------------------------------------------------------------- batching


def batch_rollouts(ref: str, items: Iterable[RolloutRecord | Problem], size: int = ROLLOUT_BATCH) -> Iterator[Event]:
    buf: list[RolloutRecord] = []
    for item in items:
        if isinstance(item, Problem):
            yield item
            continue
        buf.append(item)
        if len(buf) >= size:
            yield RolloutsEvent(ref, buf)
            buf = []
    if buf:
        yield RolloutsEvent(ref, buf)


def batch_points(ref: str, items: Iterable[MetricPoint | Problem], size: int = POINT_BATCH) -> Iterator[Event]:
    buf: list[MetricPoint] = []
    count = 0
    for item in items:
        if isinstance(item, Problem):
            yield item
            continue
        buf.append(item)
        count += max(1, len(item["values"]))
        if count >= size:
            yield MetricsEvent(ref, buf)
            buf, count = [], 0
    if buf:
        yield MetricsEvent(ref, buf)


def numeric_values(row: dict[str, Any], skip: Iterable[str] = ()) -> dict[str, float | None]:
    """Every numeric (or null) key of a metrics row, names kept as they are."""
    skipped = set(skip)
    out: dict[str, float | None] = {}
    for k, v in row.items():
        if k in skipped:
            continue
        if v is None:
            out[k] = None
        elif isinstance(v, int | float):
            out[k] = num(v)
    return out


# ---------------------------------------------------------------- chat messages


def content_text(content: Any) -> str | None:
    """Text of an OpenAI / Inspect content field: a string, or a list of parts.

    Image parts become markdown image links so an inline data URI stays in the text (the server
    offloads it); we never scan the string, so a 1 MB base64 blob costs one join.
    """
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                t = p.get("type")
                if t in ("text", "input_text", "output_text") or (t is None and "text" in p):
                    parts.append(str(p.get("text") or ""))
                elif t in ("image_url", "input_image", "image"):
                    img = p.get("image_url", p.get("image"))
                    url = img.get("url") if isinstance(img, dict) else img
                    parts.append(f"![image]({url})")
                elif t == "reasoning":
                    continue  # returned separately by reasoning_text()
                else:
                    parts.append(json.dumps(p, default=str))
        return "\n".join(parts)
    if isinstance(content, dict):
        return content_text([content])
    return str(content)


def reasoning_text(msg: dict[str, Any]) -> str | None:
    r = msg.get("reasoning_content") or msg.get("reasoning")
    if isinstance(r, str) and r:
        return r
    content = msg.get("content")
    if isinstance(content, list):
        rs = [str(p.get("reasoning") or "") for p in content if isinstance(p, dict) and p.get("type") == "reasoning"]
        if rs:
            return "\n".join(rs)
    blocks = msg.get("thinking_blocks")
    if isinstance(blocks, list) and blocks:
        return "\n".join(str(b.get("thinking", "")) if isinstance(b, dict) else str(b) for b in blocks)
    return None


def tool_call(raw: Any) -> ToolCallRecord | None:
    """One tool call from an OpenAI-nested, flat, Inspect-style or JSON-string form."""
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except ValueError:
            return {"name": "unknown", "arguments": raw}
    if not isinstance(raw, dict):
        return None
    fn = raw.get("function")
    if isinstance(fn, dict):
        name, args = fn.get("name"), fn.get("arguments")
    else:
        # flat form, or Inspect where `function` is the name string
        name = fn if isinstance(fn, str) else raw.get("name")
        args = raw.get("arguments", raw.get("args", raw.get("input")))
    if isinstance(args, str):
        try:
            args = loads(args)
        except ValueError:
            pass  # keep the raw string: the model wrote invalid JSON and that is worth seeing
    rec: ToolCallRecord = {"call_id": raw.get("id"), "name": str(name or "unknown"), "arguments": args}
    return rec


def messages_to_turns(messages: Any) -> list[TurnRecord]:
    """Chat messages -> turns; tool results go into the matching ToolCall's output.

    Tool messages are paired by `tool_call_id` when present, else by order with the calls that
    have no output yet (older verifiers files carry no ids).
    """
    if messages is None:
        return []
    if isinstance(messages, str):
        return [{"role": "assistant", "content": messages}]
    turns: list[TurnRecord] = []
    by_id: dict[str, ToolCallRecord] = {}
    pending: list[ToolCallRecord] = []
    for m in messages if isinstance(messages, list) else [messages]:
        if not isinstance(m, dict):
            turns.append({"role": "assistant", "content": str(m)})
            continue
        role = str(m.get("role") or "assistant")
        if role == "tool":
            target = None
            tcid = m.get("tool_call_id")
            if tcid is not None and tcid in by_id:
                target = by_id.pop(tcid)
                if target in pending:
                    pending.remove(target)
            elif pending:
                target = pending.pop(0)
                if target.get("call_id") in by_id:
                    by_id.pop(target["call_id"])  # type: ignore[arg-type]
            if target is not None:
                target["output"] = content_text(m.get("content"))
                err = m.get("error")
                if err:
                    target["is_error"] = True
                    if not target["output"]:
                        target["output"] = err_text(err)
                continue
        turn: TurnRecord = {"role": role, "content": content_text(m.get("content"))}
        reasoning = reasoning_text(m)
        if reasoning:
            turn["reasoning"] = reasoning
        if m.get("model"):
            turn["model"] = m["model"]
        calls_raw = m.get("tool_calls")
        if calls_raw:
            calls = [c for c in (tool_call(r) for r in calls_raw) if c is not None]
            for c in calls:
                pending.append(c)
                if c.get("call_id"):
                    by_id[c["call_id"]] = c  # type: ignore[index]
            turn["tool_calls"] = calls
        if role == "tool":  # an orphan tool result: keep it as its own turn
            turn["metadata"] = {k: m[k] for k in ("tool_call_id", "name", "function") if m.get(k)}
        turns.append(turn)
    return turns


def last_assistant_text(turns: list[TurnRecord]) -> str | None:
    for t in reversed(turns):
        if t.get("role") == "assistant" and t.get("content"):
            return t["content"]
    return None


# ---------------------------------------------------------------- zips


@dataclass
class ZipLimits:
    max_total_bytes: int = 2 * 1024**3
    max_entries: int = 100_000


class ZipRejected(Exception):
    pass


class SafeZip:
    """A zip read with caps on entry count and total uncompressed bytes (declared AND actually read)."""

    def __init__(self, path: str | Path, limits: ZipLimits | None = None):
        self.limits = limits or ZipLimits()
        self.zf = zipfile.ZipFile(path)
        infos = self.zf.infolist()
        if len(infos) > self.limits.max_entries:
            raise ZipRejected(f"zip has {len(infos)} entries (limit {self.limits.max_entries})")
        declared = sum(i.file_size for i in infos)
        if declared > self.limits.max_total_bytes:
            raise ZipRejected(f"zip declares {declared} uncompressed bytes (limit {self.limits.max_total_bytes})")
        self.infos = {i.filename: i for i in infos}
        self.read_total = 0

    def names(self) -> list[str]:
        return list(self.infos)

    def chunks(self, name: str) -> Iterator[bytes]:
        info = self.infos[name]
        got = 0
        with self.zf.open(info) as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                got += len(chunk)
                self.read_total += len(chunk)
                # headers can lie: count what really comes out
                if got > info.file_size:
                    raise ZipRejected(f"{name}: more bytes than its declared size {info.file_size}")
                if self.read_total > self.limits.max_total_bytes:
                    raise ZipRejected(f"zip expands past {self.limits.max_total_bytes} bytes")
                yield chunk

    def read(self, name: str) -> bytes:
        return b"".join(self.chunks(name))

    def extract_all(self, dest: Path) -> None:
        root = dest.resolve()
        for name, info in self.infos.items():
            if info.is_dir():
                continue
            target = (root / name).resolve()
            if not str(target).startswith(str(root) + os.sep):
                raise ZipRejected(f"unsafe path in zip: {name!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                for chunk in self.chunks(name):
                    out.write(chunk)

    def close(self) -> None:
        self.zf.close()


def rmtree_quiet(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------- tests in patches

_DIFF_PATH = re.compile(r"^(?:diff --git a/(\S+) b/(\S+)|\+\+\+ b/(\S+)|--- a/(\S+))", re.M)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|spec|specs)(/|$)|(^|/)test_[^/]*$|_tests?\.[^/]+$|\.(test|spec)\.[^/]+$|(^|/)conftest\.py$",
    re.I,
)


def patch_paths(patch: str) -> set[str]:
    paths: set[str] = set()
    for m in _DIFF_PATH.finditer(patch):
        for g in m.groups():
            if g and g != "/dev/null":
                paths.add(g)
    return paths


def patch_touches_tests(patch: str) -> bool:
    """True when a unified diff modifies a test file (a reward-hacking signal for SWE tasks)."""
    if not patch:
        return False
    return any(_TEST_PATH.search(p) for p in patch_paths(patch))
