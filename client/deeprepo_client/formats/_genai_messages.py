"""The chat messages of one GenAI span, from wherever its instrumentation put them.

Current semantic conventions: `gen_ai.input.messages` / `gen_ai.output.messages` /
`gen_ai.system_instructions` (structured values, or the same as JSON text), on the span or on a
log record of it (content captured as events). Older instrumentations: one event or log record a
message (`gen_ai.user.message`, `gen_ai.choice`, …). OpenLLMetry: `gen_ai.prompt.N.*` and
`gen_ai.completion.N.*` attributes. Each message comes out as one plain shape:
{role, text, reasoning, calls: [{id, name, arguments}], results: [{id, text}]}.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._values import json_container

_LEGACY_ROLES = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                 "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_INDEXED = re.compile(r"gen_ai\.(prompt|completion)\.(\d+)\.(.+)")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _arguments(value: Any) -> Any:
    return json_container(value) if isinstance(value, str) else value


def _call(raw: dict[str, Any]) -> dict[str, Any]:
    fn: dict[str, Any] = raw["function"] if isinstance(raw.get("function"), dict) else raw
    return {"id": raw.get("id") or raw.get("tool_call_id"), "name": str(fn.get("name") or "unknown"),
            "arguments": _arguments(fn.get("arguments"))}


def message(raw: Any, role: str | None = None) -> dict[str, Any]:
    """One message in the conventions' `parts` form or the OpenAI form."""
    if not isinstance(raw, dict):
        return {"role": role or "user", "text": _text(raw), "reasoning": None, "calls": [], "results": []}
    out: dict[str, Any] = {"role": str(raw.get("role") or role or "assistant"), "text": None,
                           "reasoning": None, "calls": [], "results": []}
    texts: list[str] = []
    thoughts: list[str] = []
    parts = raw.get("parts")
    if isinstance(parts, list):
        for p in parts:
            if not isinstance(p, dict):
                texts.append(_text(p))
                continue
            kind = p.get("type")
            if kind == "text":
                texts.append(_text(p.get("content", "")))
            elif kind == "reasoning":
                thoughts.append(_text(p.get("content", "")))
            elif kind == "tool_call":
                out["calls"].append(_call(p))
            elif kind == "tool_call_response":
                out["results"].append({"id": p.get("id"), "text": _text(p.get("response", p.get("result", "")))})
            else:
                texts.append(_text(p))
    else:
        content = raw.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif content is not None:
            texts.append(_text(content))
        for c in raw.get("tool_calls") or []:
            if isinstance(c, dict):
                out["calls"].append(_call(c))
        if out["role"] == "tool" and (raw.get("tool_call_id") or raw.get("id")):
            out["results"].append({"id": raw.get("tool_call_id") or raw.get("id"), "text": "\n".join(texts)})
            texts = []
    out["text"] = "\n".join(texts) if texts else None
    out["reasoning"] = "\n".join(thoughts) if thoughts else None
    return out


def _message_list(value: Any) -> list[dict[str, Any]]:
    value = json_container(value)
    if isinstance(value, dict):
        value = [value]
    return [message(m) for m in value] if isinstance(value, list) else []


def _system(value: Any) -> str | None:
    value = json_container(value)
    if value is None:
        return None
    if isinstance(value, list):
        return "\n".join(_text(p.get("content", p)) if isinstance(p, dict) else _text(p) for p in value)
    return _text(value)


def _indexed(attrs: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        m = _INDEXED.match(key)
        if m:
            found.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = value
    prompts = [message(found[k], "user") for k in sorted(found) if k[0] == "prompt"]
    completions = [message(found[k], "assistant") for k in sorted(found) if k[0] == "completion"]
    return prompts, completions


def _legacy(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Messages of the older one-event-per-message conventions, in time order."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for rec in sorted(records, key=lambda r: r.get("time_ns") or 0):
        name = rec.get("name") or rec.get("event_name") or rec.get("attributes", {}).get("event.name")
        body: dict[str, Any] = rec["body"] if isinstance(rec.get("body"), dict) else rec.get("attributes") or {}
        if name in _LEGACY_ROLES:
            inputs.append(message(body, _LEGACY_ROLES[name]))
        elif name == "gen_ai.choice":
            outputs.append(message(body.get("message") if isinstance(body.get("message"), dict) else body,
                                   "assistant"))
    return inputs, outputs


def span_messages(attrs: dict[str, Any], records: list[dict[str, Any]]) -> tuple[
        str | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions, input messages, output messages) of a span; `records` are its span
    events and log records ({name | event_name, time_ns, attributes, body})."""
    merged = dict(attrs)
    for rec in records:
        for key, value in (rec.get("attributes") or {}).items():
            if key.startswith(("gen_ai.input.", "gen_ai.output.", "gen_ai.system_instructions")):
                merged.setdefault(key, value)
    system = _system(merged.get("gen_ai.system_instructions"))
    inputs = _message_list(merged.get("gen_ai.input.messages"))
    outputs = _message_list(merged.get("gen_ai.output.messages"))
    if not inputs and not outputs:
        inputs, outputs = _legacy(records)
    if not inputs and not outputs:
        inputs, outputs = _indexed(attrs)
    return system, inputs, outputs
