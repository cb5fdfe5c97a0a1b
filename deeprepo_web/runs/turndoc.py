"""The document that holds a rollout's turns and tool calls (runs_rolloutturns.doc), which the views
runs_turn and runs_toolcall (runs 0020) read back as rows.

It is a list of turns in index order. A turn is an object with short keys, and a key is left out
when its value is the column's default (most are), so that a 150 B turn is not doubled by the names
of its empty fields:

- turn: `id`, `i` index, `r` role, `c` content, `cb` content_blob, `cs` content_size (only when it is
  not the content's length), `rs` reasoning, `it` / `ot` input / output tokens, `l` latency, `m`
  model, `md` metadata, `k` its tool calls (nested ones too, each parent before its sub-calls);
- call: `id`, `p` parent id, `i` index, `ci` call_id, `n` name, `a` arguments, `o` output, `ob`
  output_blob, `os` output_size (only when not the output's length), `e` is_error, `d` duration,
  `m` model, `it` / `ot` tokens, `co` cost.

Runs 0020 writes the same keys in SQL when it folds stored rows, and its views read them:
`tests/runs/test_turn_document.py` checks that what goes in here comes back out of the views.
"""

from __future__ import annotations

import math
from typing import Any


def turn_entry(
    *, turn_id: int, index: int, role: str, content: str, blob: str, size: int, reasoning: str,
    input_tokens: int | None, output_tokens: int | None, latency: float | None, model: str,
    metadata: dict[str, Any] | None,
) -> dict[str, Any]:
    t: dict[str, Any] = {"id": turn_id, "i": index, "r": role}
    if content:
        t["c"] = content
    if blob:
        t["cb"] = blob
    if size != len(content):
        t["cs"] = size
    if reasoning:
        t["rs"] = reasoning
    if input_tokens is not None:
        t["it"] = input_tokens
    if output_tokens is not None:
        t["ot"] = output_tokens
    if latency is not None and math.isfinite(latency):  # JSON has no NaN: left out, read as NULL
        t["l"] = latency
    if model:
        t["m"] = model
    if metadata:
        t["md"] = metadata
    return t


def call_entry(
    *, call_id: int, parent: int | None, index: int, external_id: str, name: str, arguments: Any,
    output: str, blob: str, size: int, is_error: bool, duration: float | None, model: str,
    input_tokens: int | None, output_tokens: int | None, cost: float | None,
) -> dict[str, Any]:
    c: dict[str, Any] = {"id": call_id, "i": index, "n": name}
    if parent is not None:
        c["p"] = parent
    if external_id:
        c["ci"] = external_id
    if arguments is not None:
        c["a"] = arguments
    if output:
        c["o"] = output
    if blob:
        c["ob"] = blob
    if size != len(output):
        c["os"] = size
    if is_error:
        c["e"] = True
    if duration is not None and math.isfinite(duration):
        c["d"] = duration
    if model:
        c["m"] = model
    if input_tokens is not None:
        c["it"] = input_tokens
    if output_tokens is not None:
        c["ot"] = output_tokens
    if cost is not None and math.isfinite(cost):
        c["co"] = cost
    return c


def bodies_cleared(doc: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
    """The document without its bodies (turns' content and reasoning, calls' arguments and output, the
    blobs they point at), sizes kept; and the blob shas it pointed at. For the retention sweep."""
    shas: set[str] = set()
    out = []
    for turn in doc:
        size = turn.get("cs", len(turn.get("c", "")))
        if turn.get("cb"):
            shas.add(turn["cb"])
        t = {k: v for k, v in turn.items() if k not in ("c", "rs", "cb", "cs", "k")}
        if size:
            t["cs"] = size
        calls = []
        for call in turn.get("k") or ():
            size = call.get("os", len(call.get("o", "")))
            if call.get("ob"):
                shas.add(call["ob"])
            c = {k: v for k, v in call.items() if k not in ("o", "ob", "os", "a")}
            if size:
                c["os"] = size
            calls.append(c)
        if calls:
            t["k"] = calls
        out.append(t)
    return out, shas


def _number(value: Any, kind: type) -> Any:
    # The migration wrote a stored NaN or ±Infinity as the strings "NaN" / "Infinity", as the views read them.
    return None if value is None else kind(value)


def turn_fields(entry: dict[str, Any]) -> dict[str, Any]:
    """A turn entry as the columns of the view runs_turn (its `rollout_id` aside), defaults filled in
    as the view fills them."""
    content = entry.get("c", "")
    return {
        "id": entry["id"], "index": entry["i"], "role": entry.get("r", ""), "content": content,
        "content_blob": entry.get("cb", ""), "content_size": entry.get("cs", len(content)),
        "reasoning": entry.get("rs", ""), "input_tokens": _number(entry.get("it"), int),
        "output_tokens": _number(entry.get("ot"), int), "latency": _number(entry.get("l"), float),
        "model": entry.get("m", ""), "metadata": entry.get("md", {}),
    }


def call_fields(entry: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """A call entry of `turn` as the columns of the view runs_toolcall (its `rollout_id` aside)."""
    output = entry.get("o", "")
    return {
        "id": entry["id"], "turn_id": turn["id"], "turn_index": turn["i"], "parent_id": entry.get("p"),
        "index": entry["i"], "call_id": entry.get("ci", ""), "name": entry.get("n", ""),
        "arguments": entry.get("a"), "output": output, "output_blob": entry.get("ob", ""),
        "output_size": entry.get("os", len(output)), "is_error": bool(entry.get("e", False)),
        "duration": _number(entry.get("d"), float), "model": entry.get("m", ""),
        "input_tokens": _number(entry.get("it"), int), "output_tokens": _number(entry.get("ot"), int),
        "cost": _number(entry.get("co"), float),
    }
