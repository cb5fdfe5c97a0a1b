"""OTLP/JSON bodies built by hand for the ingest tests (as the spec writes them: hex ids)."""

from __future__ import annotations

import json
from typing import Any

TRACE = "5b8efff798038103d269b633813fc60c"


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": str(v)}


def span(span_id: str, parent: str, name: str, start: int, end: int, trace: str = TRACE,
         status: dict[str, Any] | None = None, **attrs: Any) -> dict[str, Any]:
    out = {"traceId": trace, "spanId": span_id, "parentSpanId": parent, "name": name, "kind": 1,
           "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
           "attributes": [{"key": k.replace("__", "."), "value": value(v)} for k, v in attrs.items()]}
    if status:
        out["status"] = status
    return out


def body(spans: list[dict[str, Any]], **resource: Any) -> bytes:
    res = {"attributes": [{"key": k.replace("__", "."), "value": value(v)} for k, v in resource.items()]}
    return json.dumps({"resourceSpans": [{"resource": res, "scopeSpans": [{"scope": {"name": "t"},
                                                                           "spans": spans}]}]}).encode()


def _msgs(*pairs: tuple[str, str]) -> str:
    return json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]} for r, c in pairs])


def agent_trace(trace: str = TRACE, reward: float = 0.5) -> list[dict[str, Any]]:
    """invoke_agent -> chat (asks for a tool) -> execute_tool (-> invoke_agent helper -> chat) -> chat."""
    call = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": "capital of France"}}]}])
    return [
        span("a000000000000001", "", "invoke_agent solver", 1000, 9000, trace,
             gen_ai__operation__name="invoke_agent", gen_ai__agent__name="solver",
             step=7, sample_index=2, reward=reward, example_id="geo-1", my__custom__flag=True),
        span("a000000000000002", "a000000000000001", "chat policy", 1100, 2000, trace,
             gen_ai__operation__name="chat", gen_ai__request__model="policy",
             gen_ai__usage__input_tokens=30, gen_ai__usage__output_tokens=5,
             gen_ai__input__messages=_msgs(("user", "What is the capital of France?")),
             gen_ai__output__messages=call, gen_ai__response__finish_reasons=["tool_calls"]),
        span("a000000000000003", "a000000000000001", "execute_tool search", 2100, 6000, trace,
             gen_ai__operation__name="execute_tool", gen_ai__tool__name="search", gen_ai__tool__call__id="c1",
             gen_ai__tool__call__result="Paris is the capital."),
        span("a000000000000004", "a000000000000003", "invoke_agent reader", 2200, 5000, trace,
             gen_ai__operation__name="invoke_agent", gen_ai__agent__name="reader"),
        span("a000000000000005", "a000000000000004", "chat reader-model", 2300, 4000, trace,
             gen_ai__operation__name="chat", gen_ai__request__model="reader-model",
             gen_ai__usage__input_tokens=100, gen_ai__usage__output_tokens=9,
             gen_ai__input__messages=_msgs(("user", "Summarize the page")),
             gen_ai__output__messages=_msgs(("assistant", "Paris."))),
        span("a000000000000006", "a000000000000001", "chat policy", 6100, 8000, trace,
             gen_ai__operation__name="chat", gen_ai__request__model="policy",
             gen_ai__usage__input_tokens=50, gen_ai__usage__output_tokens=3,
             gen_ai__input__messages=json.dumps([
                 {"role": "user", "parts": [{"type": "text", "content": "What is the capital of France?"}]},
                 json.loads(call)[0],
                 {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "Paris is the capital."}]}]),
             gen_ai__output__messages=_msgs(("assistant", "Paris")), gen_ai__response__finish_reasons=["stop"]),
    ]
