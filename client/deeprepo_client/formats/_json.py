"""Reading JSON and JSON lines: orjson where it is installed, json's values and messages always."""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from ..records import Problem

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



def json_object(path: str | Path) -> Generator[Problem, None, dict[str, Any]]:
    """The JSON object in `path` ({} when it holds something else); yields a Problem when it cannot be
    read. In a parser: `meta = yield from json_object(path)`."""
    loaded, problem = load_json(path)
    if problem:
        yield problem
    return loaded if isinstance(loaded, dict) else {}
