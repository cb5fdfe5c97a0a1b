"""Ids and numbers out of foreign records: hashes, digests, numbers, token counts, times, error text."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from ._json import loads


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


def json_container(v: Any) -> Any:
    """A string holding a JSON object or list, decoded; anything else (or undecodable text) as it is."""
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return loads(v)
        except ValueError:
            return v
    return v


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
