"""OTLP/HTTP request bodies (protobuf or JSON) into plain items: one per span or log record.

Both encodings land in the same shape so the rest never knows which one came. OTLP/JSON differs
from protobuf's generic JSON mapping: trace and span ids are hex, not base64, and 64-bit integers
may be strings. Strings longer than `max_value` are cut (and said so in `warnings`): one huge
attribute must not cost the span, nor the whole request.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from deeprepo_web.text import clean_deep

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class BodyError(ValueError):
    """The body cannot be read at all (the whole request is rejected with 400)."""


@dataclass
class Item:
    trace_id: str
    key: str  # span id, or "log:<hash>" for a log record
    kind: str  # "span" | "log"
    span_id: str  # parent span of a span; the span a log record belongs to
    name: str
    start_ns: int
    end_ns: int
    data: dict[str, Any]  # attributes, events, status


@dataclass
class Decoded:
    # (resource attributes, items of that resource)
    groups: list[tuple[dict[str, Any], list[Item]]] = field(default_factory=list)
    rejected: int = 0
    warnings: list[str] = field(default_factory=list)


class _Limits:
    def __init__(self, max_value: int, out: Decoded) -> None:
        self.max_value = max_value
        self.out = out

    def text(self, value: str, where: str) -> str:
        if len(value) <= self.max_value:
            return value
        if len(self.out.warnings) < 20:
            self.out.warnings.append(
                f"{where}: a value of {len(value):,} characters was cut to the first {self.max_value:,}")
        return value[: self.max_value]


# --- protobuf -------------------------------------------------------------------------------

def _pb_value(v: Any, lim: _Limits, where: str) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return lim.text(v.string_value, where)
    if kind == "array_value":
        return [_pb_value(x, lim, where) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _pb_value(kv.value, lim, where) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return lim.text(base64.b64encode(v.bytes_value).decode(), where)
    return getattr(v, kind)


def _pb_attrs(attrs: Any, lim: _Limits, where: str) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.value, lim, f"{where} attribute {kv.key!r}") for kv in attrs}


def _pb_span(s: Any, lim: _Limits) -> Item:
    span_id = s.span_id.hex()
    where = f"span {span_id}"
    data: dict[str, Any] = {"attributes": _pb_attrs(s.attributes, lim, where)}
    if s.events:
        data["events"] = [{"name": e.name, "time_ns": e.time_unix_nano,
                           "attributes": _pb_attrs(e.attributes, lim, where)} for e in s.events]
    if s.status.code:
        data["status"] = {"code": int(s.status.code), "message": lim.text(s.status.message, where)}
    return Item(s.trace_id.hex(), span_id, "span", s.parent_span_id.hex(), s.name[:500],
                s.start_time_unix_nano, s.end_time_unix_nano, data)


def _pb_log(r: Any, lim: _Limits) -> Item:
    data: dict[str, Any] = {"attributes": _pb_attrs(r.attributes, lim, "log record")}
    if r.event_name:
        data["event_name"] = r.event_name
    body = _pb_value(r.body, lim, "log record body")
    if body not in (None, "", {}):
        data["body"] = body
    return _log_item(r.trace_id.hex(), r.span_id.hex(), r.time_unix_nano or r.observed_time_unix_nano, data)


def _log_item(trace_id: str, span_id: str, time_ns: int, data: dict[str, Any]) -> Item:
    # A log record has no id of its own: its content is its identity, so a re-sent one is stored once.
    digest = hashlib.sha256(orjson.dumps([span_id, time_ns, data], default=str)).hexdigest()[:40]
    return Item(trace_id, f"log:{digest}", "log", span_id, str(data.get("event_name") or "")[:500],
                time_ns, time_ns, data)


def _protobuf(body: bytes, logs: bool, lim: _Limits) -> None:
    req: Any = ExportLogsServiceRequest() if logs else ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except (DecodeError, ValueError) as exc:
        raise BodyError(f"body: not an OTLP {'logs' if logs else 'traces'} protobuf message ({exc})") from exc
    out = lim.out
    for res in req.resource_logs if logs else req.resource_spans:
        resource = _pb_attrs(res.resource.attributes, lim, "resource")
        items: list[Item] = []
        for scope in res.scope_logs if logs else res.scope_spans:
            for rec in scope.log_records if logs else scope.spans:
                if len(rec.trace_id) != 16 or (not logs and len(rec.span_id) != 8):
                    out.rejected += 1
                    _reject(out, "a span without a 16-byte trace id and an 8-byte span id" if not logs
                            else "a log record without a trace id (not part of any trace)")
                    continue
                items.append(_pb_log(rec, lim) if logs else _pb_span(rec, lim))
        out.groups.append((resource, items))


def _reject(out: Decoded, reason: str) -> None:
    if len(out.warnings) < 20:
        out.warnings.append(f"rejected {reason}")


# --- JSON -----------------------------------------------------------------------------------

def _get(d: dict[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    value = d.get(camel)
    return d.get(snake, default) if value is None else value


def _js_value(v: Any, lim: _Limits, where: str) -> Any:
    if not isinstance(v, dict) or not v:
        return None
    if "stringValue" in v or "string_value" in v:
        return lim.text(str(_get(v, "stringValue", "string_value")), where)
    if "intValue" in v or "int_value" in v:
        return int(_get(v, "intValue", "int_value"))
    if "doubleValue" in v or "double_value" in v:
        return float(_get(v, "doubleValue", "double_value"))
    if "boolValue" in v or "bool_value" in v:
        return bool(_get(v, "boolValue", "bool_value"))
    if "arrayValue" in v or "array_value" in v:
        return [_js_value(x, lim, where) for x in (_get(v, "arrayValue", "array_value") or {}).get("values") or []]
    if "kvlistValue" in v or "kvlist_value" in v:
        return _js_attrs((_get(v, "kvlistValue", "kvlist_value") or {}).get("values") or [], lim, where)
    if "bytesValue" in v or "bytes_value" in v:
        return lim.text(str(_get(v, "bytesValue", "bytes_value")), where)
    return None


def _js_attrs(attrs: Any, lim: _Limits, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in attrs if isinstance(attrs, list) else []:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = _js_value(kv.get("value"), lim, f"{where} attribute {kv['key']!r}")
    return out


def _hex_id(value: Any, size: int) -> str | None:
    if not isinstance(value, str) or len(value) != 2 * size:
        return None
    try:
        bytes.fromhex(value)
    except ValueError:
        return None
    return value.lower()


def _js_span(s: dict[str, Any], lim: _Limits) -> Item | None:
    trace_id = _hex_id(_get(s, "traceId", "trace_id"), 16)
    span_id = _hex_id(_get(s, "spanId", "span_id"), 8)
    if trace_id is None or span_id is None:
        return None
    where = f"span {span_id}"
    data: dict[str, Any] = {"attributes": _js_attrs(s.get("attributes"), lim, where)}
    events = s.get("events") or []
    if events:
        data["events"] = [{"name": str(e.get("name") or ""), "time_ns": int(_get(e, "timeUnixNano", "time_unix_nano", 0)),
                           "attributes": _js_attrs(e.get("attributes"), lim, where)}
                          for e in events if isinstance(e, dict)]
    status = s.get("status") or {}
    if isinstance(status, dict) and status.get("code"):
        data["status"] = {"code": _status_code(status["code"]), "message": lim.text(str(status.get("message") or ""), where)}
    parent = _hex_id(_get(s, "parentSpanId", "parent_span_id"), 8) or ""
    return Item(trace_id, span_id, "span", parent, str(s.get("name") or "")[:500],
                int(_get(s, "startTimeUnixNano", "start_time_unix_nano", 0)),
                int(_get(s, "endTimeUnixNano", "end_time_unix_nano", 0)), data)


def _status_code(code: Any) -> int:
    names = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
    return names.get(code, 0) if isinstance(code, str) else int(code)


def _js_log(r: dict[str, Any], lim: _Limits) -> Item | None:
    trace_id = _hex_id(_get(r, "traceId", "trace_id"), 16)
    if trace_id is None:
        return None
    data: dict[str, Any] = {"attributes": _js_attrs(r.get("attributes"), lim, "log record")}
    event_name = _get(r, "eventName", "event_name")
    if event_name:
        data["event_name"] = str(event_name)
    body = _js_value(r.get("body"), lim, "log record body")
    if body not in (None, "", {}):
        data["body"] = body
    time_ns = int(_get(r, "timeUnixNano", "time_unix_nano", 0) or _get(r, "observedTimeUnixNano", "observed_time_unix_nano", 0))
    return _log_item(trace_id, _hex_id(_get(r, "spanId", "span_id"), 8) or "", time_ns, data)


def _json(body: bytes, logs: bool, lim: _Limits) -> None:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BodyError(f"body: not JSON ({exc})") from exc
    top = "resourceLogs" if logs else "resourceSpans"
    resources = _get(doc, top, "resource_logs" if logs else "resource_spans") if isinstance(doc, dict) else None
    if not isinstance(resources, list):
        raise BodyError(f"body: expected a JSON object with a {top!r} list (an OTLP export request)")
    out = lim.out
    for res in resources:
        if not isinstance(res, dict):
            continue
        resource = _js_attrs((res.get("resource") or {}).get("attributes"), lim, "resource")
        items: list[Item] = []
        for scope in _get(res, "scopeLogs" if logs else "scopeSpans", "scope_logs" if logs else "scope_spans") or []:
            records = _get(scope, "logRecords" if logs else "spans", "log_records" if logs else "spans") or []
            for rec in records if isinstance(records, list) else []:
                try:
                    item = (_js_log if logs else _js_span)(rec, lim) if isinstance(rec, dict) else None
                except (TypeError, ValueError, AttributeError):
                    item = None  # a number that is not one, a list where an object belongs
                if item is None:
                    out.rejected += 1
                    _reject(out, "a span without a hex traceId (32 digits) and spanId (16 digits)" if not logs
                            else "a log record without a hex traceId (not part of any trace)")
                    continue
                items.append(item)
        out.groups.append((resource, items))


def decode(body: bytes, content_type: str, *, logs: bool, max_value: int) -> Decoded:
    """Items of an ExportTraceServiceRequest (or, with `logs`, ExportLogsServiceRequest)."""
    out = Decoded()
    lim = _Limits(max_value, out)
    if content_type == PROTOBUF:
        _protobuf(body, logs, lim)
    else:
        _json(body, logs, lim)
    for _, items in out.groups:
        for item in items:
            item.data = clean_deep(item.data)  # NUL and lone surrogates cannot go into jsonb
    return out
