"""A rollout as OpenAI chat messages with tools: the row of an SFT / rejection-sampling dataset.

Assistant turns carry `tool_calls` (arguments as a JSON string, as the API sends them), each
followed by a `tool` message with its output, unless the trajectory logged tool turns itself.
Reasoning goes in `reasoning_content`. Bodies kept in the blob store are read back whole.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from deeprepo_web.labels.models import Mark, MarkStatus
from deeprepo_web.runs.models import Rollout, ToolCall, Turn
from deeprepo_web.runs.turns import turns_and_top_calls
from deeprepo_web.storage import blob_get


def _body(text: str, blob: str) -> str:
    if not blob:
        return text
    try:
        return blob_get(blob).decode("utf-8", "replace")
    except FileNotFoundError:
        return text  # the preview is what is left


def _prompt_messages(prompt: Any) -> list[dict[str, Any]]:
    if isinstance(prompt, list) and all(isinstance(m, dict) and "role" in m for m in prompt):
        return [{"role": str(m["role"]), "content": m.get("content") if isinstance(m.get("content"), str)
                 else json.dumps(m.get("content"), ensure_ascii=False)} for m in prompt]
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return []


def _message(turn: Turn, calls: list[ToolCall], tool_turns: bool) -> list[dict[str, Any]]:
    msg: dict[str, Any] = {"role": turn.role, "content": _body(turn.content, turn.content_blob)}
    if turn.reasoning:
        msg["reasoning_content"] = turn.reasoning
    if turn.role == "tool" and turn.metadata.get("tool_call_id"):
        msg["tool_call_id"] = str(turn.metadata["tool_call_id"])
    out = [msg]
    if calls:
        msg["tool_calls"] = []
        for c in calls:
            call_id = c.call_id or f"call_{c.pk}"
            msg["tool_calls"].append({"id": call_id, "type": "function", "function": {
                "name": c.name, "arguments": json.dumps(c.arguments if c.arguments is not None else {},
                                                        ensure_ascii=False)}})
            if not tool_turns:
                out.append({"role": "tool", "tool_call_id": call_id, "content": _body(c.output, c.output_blob)})
    return out


def chat_rows(rollout_ids: list[int]) -> list[dict[str, Any]]:
    """One dataset row per rollout, in the order of `rollout_ids` (a batch: callers stream batches)."""
    rollouts = Rollout.objects.select_related("run", "example").in_bulk(rollout_ids)
    turns, calls = turns_and_top_calls(rollout_ids)
    labels: dict[int, list[str]] = defaultdict(list)
    marks = Mark.objects.filter(rollout_id__in=rollout_ids, status=MarkStatus.CONFIRMED).select_related("label")
    for m in marks.order_by("label__name"):
        if m.label.name not in labels[m.rollout_id]:
            labels[m.rollout_id].append(m.label.name)
    rows = []
    for rid in rollout_ids:
        r = rollouts.get(rid)
        if r is None:
            continue
        ts = turns[rid]
        messages = [] if ts and ts[0].role in ("system", "user") else _prompt_messages(r.example.prompt)
        tool_turns = any(t.role == "tool" for t in ts)
        tools: dict[str, None] = {}
        for t in ts:
            messages += _message(t, calls[t.pk], tool_turns)
            tools.update((c.name, None) for c in calls[t.pk])
        rows.append({
            "rollout_id": r.pk, "run": r.run.public_id, "run_name": r.run.name, "step": r.step,
            "example": r.example.key, "reward": r.reward, "stop_condition": r.stop_condition,
            "messages": messages,
            "tools": [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
                      for name in tools],
            "final_answer": r.final_answer, "labels": labels[rid],
        })
    return rows
