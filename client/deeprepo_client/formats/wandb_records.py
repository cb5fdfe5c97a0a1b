"""W&B `Record` protobufs (wandb/proto/wandb_internal.proto) into plain tuples, by field number.

Only the record types an import needs are read: run, config, history, summary, metric, files and
exit. Others (telemetry, stats, console output, environment, …) are skipped, as are unknown fields.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ._protowire import fields, signed, text

# Record.<type> field numbers
HISTORY, SUMMARY, CONFIG, FILES, METRIC, RUN, EXIT = 2, 3, 5, 6, 12, 17, 18


_NUMBER_START = frozenset("-0123456789NI")


def _value_json(raw: str) -> Any:
    # Nearly every value is a number: float() reads those (and the bare NaN / Infinity W&B writes)
    # many times faster than json; the rest goes to json, and what json refuses stays text.
    if raw and raw[0] in _NUMBER_START:
        if raw.isdigit():
            return int(raw)
        try:
            return float(raw) if not raw.lstrip("-").isdigit() else int(raw)
        except ValueError:
            pass
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _item(buf: bytes) -> tuple[list[str], Any]:
    """A HistoryItem / ConfigItem / SummaryItem: (key path, value)."""
    key = ""
    nested: list[str] = []
    value: Any = None
    for number, v in fields(buf):
        if number == 1:
            key = text(v)
        elif number == 2:
            nested.append(text(v))
        elif number == 16:
            value = _value_json(text(v))
        elif number == 4:
            value = bool(v)
        elif number == 5:
            value = (v >> 1) ^ -(v & 1)  # sint64: zigzag
        elif number == 6:
            value = v
        elif number in (7, 8):
            value = text(v) if number == 7 else _value_json(text(v))
    return (nested or [key]), value


def _items(buf: bytes, update: int = 1, remove: int = 2) -> tuple[list[tuple[list[str], Any]], list[list[str]]]:
    updates, removes = [], []
    for number, v in fields(buf):
        if number == update:
            updates.append(_item(v))
        elif number == remove:
            removes.append(_item(v)[0])
    return updates, removes


def _history(buf: bytes) -> tuple[int | None, list[tuple[list[str], Any]]]:
    step = None
    items = []
    for number, v in fields(buf):
        if number == 1:
            items.append(_item(v))
        elif number == 2:
            step = next((signed(n) for f, n in fields(v) if f == 1), 0)
    return step, items


def _metric(buf: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = {1: "name", 2: "glob_name", 4: "step_metric"}
    for number, v in fields(buf):
        if number in names:
            out[names[number]] = text(v)
        elif number == 7:
            out["summary"] = [k for k, on in zip(("min", "max", "mean", "best", "last", "none", "copy", "first"),
                                                 [dict(fields(v)).get(i) for i in range(1, 9)], strict=True) if on]
    return out


def _run(buf: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {"tags": []}
    strings = {1: "run_id", 2: "entity", 3: "project", 6: "group", 7: "job_type", 8: "display_name",
               9: "notes", 12: "sweep_id", 13: "host"}
    for number, v in fields(buf):
        if number in strings:
            out[strings[number]] = text(v)
        elif number == 10:
            out["tags"].append(text(v))
        elif number == 4:
            out["config"] = _items(v)[0]
        elif number == 5:
            out["summary"] = _items(v)[0]
        elif number == 17:
            ts = dict(fields(v))
            out["start_time"] = ts.get(1, 0) + ts.get(2, 0) / 1e9
        elif number == 14:
            out["starting_step"] = signed(v)
    return out


ALL = frozenset({"history", "summary", "config", "metric", "run", "exit", "files"})
_KINDS = {HISTORY: "history", SUMMARY: "summary", CONFIG: "config", METRIC: "metric", RUN: "run", EXIT: "exit",
          FILES: "files"}


def record(buf: bytes, kinds: frozenset[str] = ALL) -> tuple[str, Any] | None:
    """(kind, content) of one Record, or None for a record type an import does not need or that is
    not among `kinds` (those are not decoded: a pass that wants only history skips the rest cheaply)."""
    for number, v in fields(buf):
        kind = _KINDS.get(number)
        if kind is None:
            continue
        if kind not in kinds:
            return None
        if number == HISTORY:
            return "history", _history(v)
        if number == SUMMARY:
            return "summary", _items(v)
        if number == CONFIG:
            return "config", _items(v)
        if number == METRIC:
            return "metric", _metric(v)
        if number == RUN:
            return "run", _run(v)
        if number == EXIT:
            return "exit", next((signed(c) for f, c in fields(v) if f == 1), 0)
        if number == FILES:
            return "files", [text(p) for f, item in fields(v) if f == 1 for n, p in fields(item) if n == 1]
    return None


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
