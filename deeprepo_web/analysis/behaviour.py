"""Behaviour metrics of agent trajectories, read from RolloutRecord-shaped mappings.

These are the patterns the seed reports found by hand: how often each tool is used, how many
sub-LLM calls each batch fans out to, the same error repeated many times (one SyntaxError 17
times in one rollout), rollouts that never delegate ("zero-delegation"), and over-exploring
outliers (an 18-turn rollout among 5-9-turn ones).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

BATCH_TOOLS = ("llm_batch",)


def iter_tool_calls(rollout: Mapping[str, Any], *, nested: bool = False) -> Iterator[Mapping[str, Any]]:
    """Top-level tool calls of every turn in order; with nested=True their sub-calls too (depth first)."""

    def walk(calls: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        for call in calls:
            yield call
            if nested:
                yield from walk(call.get("sub_calls") or ())

    for turn in rollout.get("turns") or ():
        yield from walk(turn.get("tool_calls") or ())


def num_turns(rollout: Mapping[str, Any]) -> int:
    """The recorded num_turns, else the number of assistant turns (the record's convention)."""
    value = rollout.get("num_turns")
    if value is not None:
        return int(value)
    return sum(1 for t in rollout.get("turns") or () if t.get("role") == "assistant")


def tool_call_counts(rollout: Mapping[str, Any], *, nested: bool = False) -> Counter[str]:
    """Tool calls per tool name (top level only unless nested=True)."""
    return Counter(str(call.get("name")) for call in iter_tool_calls(rollout, nested=nested))


def sub_calls_per_batch(rollout: Mapping[str, Any], batch_tools: Sequence[str] = BATCH_TOOLS) -> list[int]:
    """For each batch-style call (llm_batch …), how many sub-calls it fanned out to."""
    return [
        len(call.get("sub_calls") or ())
        for call in iter_tool_calls(rollout)
        if call.get("name") in batch_tools
    ]


ERROR_LINE_MAX = 1000


def error_line(output: Any) -> str:
    """The last line of an error's output, trailing blanks trimmed: tracebacks differ only in their
    preamble, the last line names the error itself. What error signatures group (kept on the rollout
    row at ingest; runs 0013 derives the same in SQL for stored rollouts)."""
    text = output if isinstance(output, str) else "" if output is None else str(output)
    return text.rstrip(" \n\r\t").rpartition("\n")[2][:ERROR_LINE_MAX]


# An error's signature: its last line with what varies between occurrences of the same error replaced,
# in this order: ids (uuids, 0x…, hex runs of 12+), paths, quoted strings, numbers. Our own fixed patterns,
# none nested, so Python's `re` runs each in linear time.
_SIGNATURE_STEPS = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f-]{27,}|0x[0-9a-f]+|\b[0-9a-f]{12,}\b", re.IGNORECASE), "<id>"),
    # A path: from the start of its first segment (`tmp/x`, `./x`, `/x`; a match starts only where no
    # segment character precedes, so a long word is tried once), or a drive (`C:\\x`).
    (re.compile(r"(?<![\w.-])[\w.-]*/[^\s:'\",)]*|\b[a-zA-Z]:\\[^\s:'\",)]*"), "<path>"),
    (re.compile(r"\"[^\"]*\"|'[^']*'"), "<str>"),
    (re.compile(r"[0-9]+(?:\.[0-9]+)?"), "<n>"),
)
SIGNATURE_MAX = 300


def error_signature(output: Any) -> str:
    """What the run's error signatures group an error by (`TypeError: bad <n>` for `TypeError: bad 42`):
    computed once, at ingest, and kept on the rollout row (tool errors in `tool_errors`, the final
    error in `error_sig`), so the errors page groups stored values instead of normalising every error
    of the run on each view."""
    sig = error_line(output)
    for pattern, placeholder in _SIGNATURE_STEPS:
        sig = pattern.sub(placeholder, sig)
    return sig.strip(" ")[:SIGNATURE_MAX]


def _error_text(call: Mapping[str, Any]) -> str | None:
    if not call.get("is_error"):
        return None
    return error_line(call.get("output")).strip() or "(empty error)"


@dataclass(frozen=True)
class RepeatedError:
    text: str
    count: int


def repeated_errors(rollout: Mapping[str, Any], min_count: int = 2) -> list[RepeatedError]:
    """Identical error texts seen at least min_count times in one rollout, most frequent first."""
    counts = Counter(
        text for call in iter_tool_calls(rollout, nested=True) if (text := _error_text(call)) is not None
    )
    return [RepeatedError(text, n) for text, n in counts.most_common() if n >= min_count]


class RolloutWalk:
    """What rollout_counts gathers. A plain object on purpose: a recursive closure would be a
    reference cycle per rollout, left for the cyclic collector, which imports run without. Plain
    dicts, not Counters: ingest walks every rollout, and a Counter costs a Python call per update."""

    __slots__ = ("tools", "fanout", "errors", "sub_tokens", "n_calls", "n_errors", "names", "failed", "turn")

    def __init__(self) -> None:
        self.tools: dict[str, int] = {}
        self.fanout: list[int] = []
        self.errors: dict[str, int] = {}
        self.sub_tokens: dict[str, list[float]] = {}
        self.n_calls = 0
        self.n_errors = 0
        # Every call's name, nested ones too, as its tool-call row holds it, and per failed call
        # [name, turn index, error line]: the facts ingest keeps on the rollout row.
        self.names: dict[str, None] = {}
        self.failed: list[list[Any]] = []
        self.turn = 0

    def visit(self, calls: Iterable[Mapping[str, Any]], top: bool) -> None:
        tools = self.tools
        for call in calls:
            subs = call.get("sub_calls") or ()
            self.n_calls += 1
            name = call.get("name")
            if top:
                key = str(name)
                tools[key] = tools.get(key, 0) + 1
                if name in BATCH_TOOLS:
                    self.fanout.append(len(subs))
            row_name = (name or "")[:500]
            self.names[row_name] = None
            if call.get("is_error"):
                line = error_line(call.get("output"))
                self.failed.append([row_name, self.turn, line])
                text = line.strip() or "(empty error)"  # as _error_text
                self.n_errors += 1
                self.errors[text] = self.errors.get(text, 0) + 1
            tin, tout, cost = call.get("input_tokens"), call.get("output_tokens"), call.get("cost")
            if tin is not None or tout is not None or cost is not None:
                entry = self.sub_tokens.setdefault(str(call.get("model") or "")[:200], [0, 0, 0.0, 0])
                entry[0] += int(tin or 0)
                entry[1] += int(tout or 0)
                if isinstance(cost, int | float) and math.isfinite(cost):
                    entry[2] += float(cost)
                    entry[3] += 1
            if subs:
                self.visit(subs, False)


def _most_common(counts: dict[str, int], n: int) -> list[tuple[str, int]]:
    """Counter.most_common(n) of a plain dict: highest first, ties in the order first seen."""
    return sorted(counts.items(), key=_second, reverse=True)[:n]


def _second(item: tuple[str, int]) -> int:
    return item[1]


def rollout_walk(rollout: Mapping[str, Any]) -> RolloutWalk:
    """One depth-first walk over the calls of every turn: what rollout_counts reports, and the names
    and failed calls ingest keeps on the rollout row (`names`, `failed`)."""
    walk = RolloutWalk()
    for index, turn in enumerate(rollout.get("turns") or ()):
        calls = turn.get("tool_calls")
        if calls:
            walk.turn = index
            walk.visit(calls, True)
    return walk


def rollout_counts(rollout: Mapping[str, Any], walk: RolloutWalk | None = None) -> dict[str, Any]:
    """All the counts above from one walk over the calls (ingest computes it per rollout, and passes
    the walk it made for the row's facts).

    tool_calls by name (top level, 50 most used), sub_calls (nested), batches and the largest
    fan-out, tool_errors, the most repeated error and its count, and the tokens and cost of calls
    per model (sub_tokens: [input, output, cost, calls that carried a cost]).
    """
    walk = walk or rollout_walk(rollout)
    tools, fanout = walk.tools, walk.fanout
    repeated = _most_common(walk.errors, 1)  # ties: the first seen, as in repeated_errors
    out: dict[str, Any] = {
        "tool_calls": {name[:200]: n for name, n in _most_common(tools, 50)},
        "sub_calls": walk.n_calls - sum(tools.values()),
        "batches": len(fanout),
        "tool_errors": walk.n_errors,
        "repeated_error_max": repeated[0][1] if repeated else 0,
    }
    if fanout:
        out["sub_calls_per_batch_max"] = max(fanout)
    if repeated and repeated[0][1] > 1:
        out["repeated_error"] = repeated[0][0][:300]
    if walk.sub_tokens:
        out["sub_tokens"] = walk.sub_tokens
    return out


def metric_value(rollout: Mapping[str, Any], name: str) -> float | None:
    """A named count or metric of a rollout: tool-call count, metrics[name], components, or a field."""
    metrics = rollout.get("metrics") or {}
    if name in metrics and isinstance(metrics[name], int | float):
        return float(metrics[name])
    components = rollout.get("reward_components") or {}
    if name in components and components[name] is not None:
        return float(components[name])
    if name in rollout and isinstance(rollout[name], int | float) and not isinstance(rollout[name], bool):
        return float(rollout[name])
    if name == "num_turns":
        return float(num_turns(rollout))
    # Anything else is read as a tool name: a tool never called counts 0, which is the point.
    return float(tool_call_counts(rollout, nested=True).get(name, 0))


def is_zero(rollout: Mapping[str, Any], name: str) -> bool:
    """True when the named tool count or metric equals 0 (e.g. zero delegation: "llm_batch")."""
    value = metric_value(rollout, name)
    return value is not None and value == 0


def zero_rate(rollouts: Iterable[Mapping[str, Any]], name: str) -> tuple[int, int]:
    """(rollouts where `name` is 0, rollouts) — e.g. zero-delegation 1/6 as in the seed report."""
    items = list(rollouts)
    return sum(1 for r in items if is_zero(r, name)), len(items)


def turn_outliers(turns: Sequence[float], *, method: str = "iqr", factor: float | None = None) -> list[int]:
    """Indices of over-long rollouts within a run.

    method="iqr": above Q3 + factor * IQR (factor 1.5); method="median": above factor x median
    (factor 2). Only the high side: short rollouts are a different failure (early answers).
    """
    arr = np.asarray(turns, dtype=float)
    if arr.size < 3:
        return []
    if method == "iqr":
        q1, q3 = np.percentile(arr, [25, 75])
        limit = q3 + (1.5 if factor is None else factor) * (q3 - q1)
    elif method == "median":
        limit = (2.0 if factor is None else factor) * float(np.median(arr))
    else:
        raise ValueError(f"unknown outlier method {method!r}")
    return [int(i) for i in np.flatnonzero(arr > limit)]
