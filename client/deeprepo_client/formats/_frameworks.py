"""Detection helpers shared by the RL frameworks' formats (registered in _builtin.py): binary
heads (pickles are refused, never loaded; rLLM gateway's SQLite store and JSON arrays) and the
first-line checks of metrics files. Each answers only on an exact match.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Detected, Event, Problem
from . import rllm_gateway
from ._json import load_json, loads

MAX_ARRAY_BYTES = 64 << 20

_PICKLE_PROTOCOLS = range(2, 6)  # protocol 2+ starts with PROTO (0x80) and the protocol number


def _is_torch_zip(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist()[:64])
    except (zipfile.BadZipFile, OSError):
        return False


def _array_format(path: Path) -> str | None:
    """A JSON array of one framework's records (rLLM gateway's session traces)."""
    if path.stat().st_size > MAX_ARRAY_BYTES:
        return None
    loaded, problem = load_json(path)
    if problem or not isinstance(loaded, list) or not loaded or not isinstance(loaded[0], dict):
        return None
    return "rllm_gateway" if rllm_gateway.is_trace(set(loaded[0])) else None


def rllm_gateway_head(path: Path, head: bytes) -> bool:
    """rLLM gateway's SQLite store, or a JSON array of its session traces."""
    if head.startswith(rllm_gateway.SQLITE_MAGIC):
        return rllm_gateway.is_store(path)
    return head.lstrip()[:1] == b"[" and _array_format(path) == "rllm_gateway"


def pickle_head(path: Path, head: bytes) -> Detected | None:
    """Pickles (refused, never loaded) and torch.save archives (a zip around a pickle)."""
    if len(head) > 1 and head[0] == 0x80 and head[1] in _PICKLE_PROTOCOLS:
        return Detected("pickle", str(path), {"kind": f"a Python pickle (protocol {head[1]})"})
    if head.startswith(b"PK\x03\x04") and _is_torch_zip(path):
        return Detected("pickle", str(path), {"kind": "a torch.save archive (a zip around a pickle)"})
    return None


def refuse_pickle(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    d = pickle_head(path, _head(path))
    kind = d.details["kind"] if d else "a pickle"
    yield Problem(str(path), None,
                  f"refused: this is {kind}. Loading a pickle runs whatever code it holds, so deeprepo never "
                  "unpickles files. Export the rollouts as JSON lines instead (SkyRL: trainer.dump_eval_results "
                  "writes dumped_evals/*.jsonl; slime: log them with deeprepo_client.log_rollouts).",
                  fatal=True)


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(8)
    except OSError:
        return b""


def first_object(path: Path, limit: int = 1 << 22) -> Any:
    """The first line of a file as JSON, or None."""
    try:
        with open(path, "rb") as f:
            return loads(f.readline(limit))
    except (OSError, ValueError):
        return None


def scalar_row(obj: Any) -> bool:
    """A metrics line: every value a number, a bool or null (what prime-rl's metrics.jsonl holds)."""
    return isinstance(obj, dict) and all(v is None or isinstance(v, int | float) for v in obj.values())
