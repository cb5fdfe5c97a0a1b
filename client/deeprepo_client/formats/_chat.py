"""Chat messages (OpenAI-style and their variants) into turns with their tool calls."""

from __future__ import annotations

import json
from typing import Any

from ..records import ToolCallRecord, TurnRecord
from ._json import loads
from ._values import err_text


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
