"""An agent loop's decoded text split back into turns, tool calls and their outputs.

verl's tool agent loop dumps a multi-turn rollout as one `output` string, decoded with
`skip_special_tokens`: the chat markers are gone, so role changes are bare `user` / `assistant` /
`tool` lines, tool calls are Hermes `<tool_call>…</tool_call>` blocks (a JSON object, or Qwen3-Coder's
`<function=name><parameter=k>v</parameter></function>`) and the environment's replies come back as
`<tool_response>…</tool_response>` in a `user` turn. Text kept with its special tokens
(`<|im_start|>user`) splits the same way.

The split is an inference from the text: the caller keeps the raw text and says so on the page.
Text without a tool tag is left alone (a bare "user" line in a one-turn answer is just text).
"""

from __future__ import annotations

import re
from typing import Any

from ..records import ToolCallRecord, TurnRecord
from ._json import loads

_ROLE = re.compile(r"(?:<\|im_start\|>|(?<=\n)|^)(user|assistant|tool)\n", re.M)
_END = re.compile(r"<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>")
_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_RESPONSE = re.compile(r"<tool_response>(.*?)(?:</tool_response>|\Z)", re.S)
_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|\Z)", re.S)
_PARAM = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.S)

MARKERS = "hermes"  # what the split was inferred from, stored beside the raw text


def has_tool_tags(text: str) -> bool:
    return "<tool_call>" in text or "<tool_response>" in text


def _call(body: str) -> ToolCallRecord:
    body = body.strip()
    fn = _FUNCTION.search(body)
    if fn:  # Qwen3-Coder's XML form
        args: dict[str, Any] = {k.strip(): v for k, v in _PARAM.findall(fn.group(2))}
        return {"name": fn.group(1).strip(), "arguments": args}
    try:
        obj = loads(body)
    except ValueError:
        return {"name": "unknown", "arguments": body}  # what the model wrote, unparsed: worth seeing
    if not isinstance(obj, dict):
        return {"name": "unknown", "arguments": obj}
    args_any = obj.get("arguments", obj.get("parameters"))
    if isinstance(args_any, str):
        try:
            args_any = loads(args_any)
        except ValueError:
            pass
    return {"name": str(obj.get("name") or "unknown"), "arguments": args_any}


def _segments(text: str) -> list[tuple[str, str]]:
    """(role, text) in order; the text before the first role line is the assistant's (the output
    starts inside the assistant's turn)."""
    out: list[tuple[str, str]] = []
    role, pos = "assistant", 0
    for m in _ROLE.finditer(text):
        out.append((role, text[pos:m.start()]))
        role, pos = m.group(1), m.end()
    out.append((role, text[pos:]))
    return [(r, _END.sub("", t).strip()) for r, t in out if _END.sub("", t).strip()]


def split_agent_text(text: str) -> list[TurnRecord] | None:
    """Turns of an agent loop's text, or None when it holds no tool tag (one turn, as written)."""
    if not isinstance(text, str) or not has_tool_tags(text):
        return None
    turns: list[TurnRecord] = []
    pending: list[ToolCallRecord] = []  # calls still waiting for their output
    for role, body in _segments(text):
        responses = _RESPONSE.findall(body)
        if role in ("user", "tool") and responses:
            for out in responses:
                if pending:
                    pending.pop(0)["output"] = out.strip()
                else:  # an output with no call we saw: keep it as the environment's turn
                    turns.append({"role": "tool", "content": out.strip()})
            rest = _RESPONSE.sub("", body).strip()
            if rest:
                turns.append({"role": "user", "content": rest})
            continue
        if role != "assistant":
            turns.append({"role": role, "content": body})
            continue
        calls = [_call(c) for c in _CALL.findall(body)]
        turn: TurnRecord = {"role": "assistant", "content": _CALL.sub("", body).strip()}
        if calls:
            turn["tool_calls"] = calls
            pending = list(calls)
        turns.append(turn)
    return turns if len(turns) > 1 or any(t.get("tool_calls") for t in turns) else None


def final_text(turns: list[TurnRecord]) -> str | None:
    """The last assistant turn that calls no tool: the answer (None while the loop ended on a call)."""
    last = next((t for t in reversed(turns) if t["role"] == "assistant"), None)
    if last is None or last.get("tool_calls"):
        return None
    return last.get("content") or None
