"""Which RL training framework wrote a file or folder: by the keys of its lines and its layout.

Kept apart from formats/__init__.py, which calls these three hooks: `line_format` (keys of a JSON
line), `binary_format` (pickles, SQLite stores, JSON arrays) and `dir_format` (folder layouts).
Each answers only on an exact match; anything else is left to the other formats or refused.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..records import Detected, Event, Problem
from . import areal, art, rllm_gateway, skyrl, verl
from ._json import load_json, loads

MAX_ARRAY_BYTES = 64 << 20

_PICKLE_PROTOCOLS = range(2, 6)  # protocol 2+ starts with PROTO (0x80) and the protocol number


def line_format(k1: set[str]) -> str | None:
    """Format of a JSON line (or document) from its top-level keys, for the frameworks' files."""
    if verl.is_dump_line(k1) or verl.is_tracker_line(k1):
        return "verl"
    if skyrl.is_sample_line(k1):
        return "skyrl"
    if areal.is_line(k1):
        return "areal"
    if art.is_history_line(k1):
        return "art"
    if rllm_gateway.is_trace(k1):
        return "rllm_gateway"
    return None


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


def binary_format(path: Path, head: bytes) -> Detected | None:
    """Pickles (refused, never loaded), torch.save archives (a zip around a pickle), SQLite stores
    and JSON arrays of the frameworks."""
    if head.startswith(rllm_gateway.SQLITE_MAGIC):
        return Detected("rllm_gateway", str(path)) if rllm_gateway.is_store(path) else None
    if head.lstrip()[:1] == b"[":
        fmt = _array_format(path)
        return Detected(fmt, str(path)) if fmt else None
    if len(head) > 1 and head[0] == 0x80 and head[1] in _PICKLE_PROTOCOLS:
        return Detected("pickle", str(path), {"kind": f"a Python pickle (protocol {head[1]})"})
    if head.startswith(b"PK\x03\x04") and _is_torch_zip(path):
        return Detected("pickle", str(path), {"kind": "a torch.save archive (a zip around a pickle)"})
    return None


def dir_format(path: Path) -> Detected | None:
    """A folder in one framework's layout."""
    if verl.looks_like_output_dir(path):
        return Detected("verl", str(path))
    if skyrl.looks_like_export(path):
        return Detected("skyrl", str(path))
    if art.looks_like_model_dir(path):
        return Detected("art", str(path))
    if areal.looks_like_trial(path):
        return Detected("areal", str(path))
    if rllm_gateway.looks_like_folder(path):
        return Detected("rllm_gateway", str(path))
    return None


def refuse_pickle(path: Path, *, partial_ok: bool = False) -> Iterator[Event]:
    d = binary_format(path, _head(path))
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


PARSERS: dict[str, Callable[..., Iterator[Event]]] = {
    "verl": verl.parse,
    "skyrl": skyrl.parse,
    "art": art.parse,
    "areal": areal.parse,
    "rllm_gateway": rllm_gateway.parse,
    "pickle": refuse_pickle,
}

EXPECTED = ("expected one of: verifiers results.jsonl + metadata.json, a Prime hosted export, TRL trainer_state.json, "
            "an Inspect .eval/.json log, SWE-agent .traj, OpenHands output.jsonl, SWE-bench reports, prime-rl "
            "metrics.jsonl or traces.jsonl, verl {step}.jsonl dumps or its file-tracker .jsonl, SkyRL dumped_evals, "
            "an ART model folder, AReaL rollout dumps, rLLM gateway traces (SQLite or session JSON)")
