"""MLflow runs and traces into neutral records; shared by the export-folder parser and the server pull.

Params become config (strings, as MLflow keeps them), tags stay tags (`key=value`, MLflow's own
`mlflow.*` tags go to config), every metric value with its step and timestamp becomes a point.
MLflow allows two values at one step: the later one (by timestamp) is kept. Traces are translated
to GenAI span attributes (CHAT_MODEL -> chat, TOOL -> execute_tool, AGENT -> invoke_agent) and
mapped to a rollout by `_genai_trace`, as OTLP spans are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..records import MetricPoint, RolloutRecord, RunRecord
from ._genai_trace import rollout_from_items
from ._values import json_container

_STATUS = {"FINISHED": "finished", "FAILED": "failed", "KILLED": "cancelled", "RUNNING": "running",
           "SCHEDULED": "queued"}
_OPS = {"CHAT_MODEL": "chat", "LLM": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent"}


def _pairs(value: Any) -> dict[str, Any]:
    """MLflow writes params / tags as [{key, value}] (REST) or as a dict (export)."""
    if isinstance(value, dict):
        return value
    return {p["key"]: p.get("value") for p in value or [] if isinstance(p, dict) and "key" in p}


def run_record(info: dict[str, Any], params: Any, tags: Any, experiment: str) -> RunRecord:
    tag_map = _pairs(tags)
    config: dict[str, Any] = dict(_pairs(params))
    system = {k: v for k, v in tag_map.items() if k.startswith("mlflow.")}
    user_tags = [f"{k}={v}" if v else k for k, v in tag_map.items() if not k.startswith("mlflow.")]
    run_id = info.get("run_id") or info.get("run_uuid") or ""
    config["_mlflow"] = {"run_id": run_id, "experiment": experiment, "experiment_id": info.get("experiment_id"),
                         "user": info.get("user_id"), "tags": system}
    start, end = info.get("start_time"), info.get("end_time")
    parent = str(tag_map.get("mlflow.parentRunId") or "")
    return {
        # a nested run (mlflow.start_run(nested=True)): its parent, in this import or imported before
        **({"parent_ref": parent, "parent_external_id": parent} if parent else {}),  # type: ignore[typeddict-item]
        "name": info.get("run_name") or tag_map.get("mlflow.runName") or run_id,
        "status": _STATUS.get(str(info.get("status")), "finished"), "config": config, "tags": user_tags,
        "source": "mlflow", "external_id": run_id, "model": str(config.get("model") or "")[:500],
        "notes": str(tag_map.get("mlflow.note.content") or ""),
        "started_at": start / 1000 if isinstance(start, int | float) else None,
        "finished_at": end / 1000 if isinstance(end, int | float) else None,
    }


def logged_tables(tags: Any) -> list[str]:
    """Artifact paths of the tables a run logged (its `mlflow.loggedArtifacts` tag)."""
    try:
        logged = json.loads(_pairs(tags).get("mlflow.loggedArtifacts") or "[]")
    except ValueError:
        return []
    return [e["path"] for e in logged if isinstance(e, dict) and e.get("type") == "table"
            and isinstance(e.get("path"), str)] if isinstance(logged, list) else []


def metric_points(histories: Iterable[tuple[str, list[dict[str, Any]]]]) -> Iterator[MetricPoint]:
    """Points of whole metric histories, one point a (key, step): the latest value by timestamp."""
    for key, history in histories:
        last: dict[int, dict[str, Any]] = {}
        for m in history:
            step = int(m.get("step") or 0)
            if step not in last or (m.get("timestamp") or 0) >= (last[step].get("timestamp") or 0):
                last[step] = m
        for step, m in sorted(last.items()):
            value = m.get("value")
            point: MetricPoint = {"step": step, "values": {key: None if value is None else float(value)}}
            if m.get("timestamp"):
                point["time"] = m["timestamp"] / 1000
            yield point


def _any(v: Any) -> Any:
    """An OTLP AnyValue as MLflow's REST answers it (snake_case keys)."""
    if not isinstance(v, dict):
        return v
    if "string_value" in v:
        return v["string_value"]
    if "array_value" in v:
        return [_any(x) for x in (v["array_value"] or {}).get("values") or []]
    if "kvlist_value" in v:
        return {kv["key"]: _any(kv.get("value")) for kv in (v["kvlist_value"] or {}).get("values") or []}
    for key in ("int_value", "double_value", "bool_value"):
        if key in v:
            return int(v[key]) if key == "int_value" else v[key]
    return None


def _attributes(raw: Any) -> dict[str, Any]:
    if isinstance(raw, list):  # REST: [{key, value: AnyValue}]
        return {a["key"]: _any(a.get("value")) for a in raw if isinstance(a, dict) and "key" in a}
    out: dict[str, Any] = {}
    for key, value in (raw or {}).items():  # Trace.to_json: every value JSON-encoded
        try:
            out[key] = json.loads(value) if isinstance(value, str) else value
        except ValueError:
            out[key] = value
    return out


def _hex(span_id: Any) -> str:
    if not span_id:
        return ""
    try:
        return base64.b64decode(span_id).hex()
    except ValueError:
        return str(span_id)


def _chat_attrs(inputs: Any, outputs: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    gen: dict[str, Any] = {}
    messages = inputs.get("messages") if isinstance(inputs, dict) else inputs
    if isinstance(messages, list):
        gen["gen_ai.input.messages"] = messages
    if isinstance(outputs, dict) and isinstance(outputs.get("choices"), list):
        gen["gen_ai.output.messages"] = [c.get("message") for c in outputs["choices"] if isinstance(c, dict)]
        gen["gen_ai.response.finish_reasons"] = [c.get("finish_reason") for c in outputs["choices"]
                                                 if isinstance(c, dict) and c.get("finish_reason")]
        usage = outputs.get("usage") or {}
        gen["gen_ai.usage.input_tokens"] = usage.get("prompt_tokens", usage.get("input_tokens"))
        gen["gen_ai.usage.output_tokens"] = usage.get("completion_tokens", usage.get("output_tokens"))
    elif isinstance(outputs, dict) and "role" in outputs:
        gen["gen_ai.output.messages"] = [outputs]
    elif isinstance(outputs, str):
        gen["gen_ai.output.messages"] = [{"role": "assistant", "content": outputs}]
    usage = json_container(attrs.get("mlflow.chat.tokenUsage"))
    if isinstance(usage, dict):
        gen.setdefault("gen_ai.usage.input_tokens", usage.get("input_tokens"))
        gen.setdefault("gen_ai.usage.output_tokens", usage.get("output_tokens"))
    model = (inputs.get("model") if isinstance(inputs, dict) else None) or attrs.get("mlflow.llm.model")
    if model:
        gen["gen_ai.request.model"] = model
    return {k: v for k, v in gen.items() if v is not None}


def genai_attributes(attrs: dict[str, Any], name: str) -> dict[str, Any]:
    """MLflow span attributes (mlflow.spanType, spanInputs, spanOutputs ...) as GenAI span attributes."""
    kind = str(attrs.get("mlflow.spanType") or "")
    inputs, outputs = json_container(attrs.get("mlflow.spanInputs")), json_container(attrs.get("mlflow.spanOutputs"))
    gen = {k: v for k, v in attrs.items() if not k.startswith("mlflow.")}
    op = _OPS.get(kind)
    if op:
        gen["gen_ai.operation.name"] = op
    if op == "chat":
        gen.update(_chat_attrs(inputs, outputs, attrs))
    elif op == "execute_tool":
        gen["gen_ai.tool.name"] = attrs.get("mlflow.spanFunctionName") or name
        gen["gen_ai.tool.call.arguments"] = inputs.get("arguments", inputs) if isinstance(inputs, dict) else inputs
        gen["gen_ai.tool.call.result"] = outputs if isinstance(outputs, str) else json.dumps(outputs, default=str)
    elif op == "invoke_agent" and isinstance(outputs, dict) and outputs.get("reward") is not None:
        gen["reward"] = outputs["reward"]
    return gen


def otlp_span_data(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The data of a span an MLflow client sent over OTLP (attributes already decoded), translated."""
    return {**data, "attributes": genai_attributes(_attributes(data.get("attributes")), name)}


def span_item(span: dict[str, Any]) -> dict[str, Any]:
    """An MLflow span (REST or Trace.to_json) as a GenAI span item for `_genai_trace`."""
    data: dict[str, Any] = {"attributes": genai_attributes(_attributes(span.get("attributes")), str(span.get("name") or ""))}
    status = span.get("status") or {}
    code = status.get("code") if isinstance(status, dict) else None
    if code in ("STATUS_CODE_ERROR", 2):
        data["status"] = {"code": 2, "message": status.get("message") or ""}
    return {"key": _hex(span.get("span_id")), "kind": "span", "span_id": _hex(span.get("parent_span_id")),
            "name": str(span.get("name") or ""), "start_ns": int(span.get("start_time_unix_nano") or 0),
            "end_ns": int(span.get("end_time_unix_nano") or 0), "data": data}


def trace_rollout(info: dict[str, Any], spans: list[dict[str, Any]]) -> RolloutRecord | None:
    trace_id = str(info.get("trace_id") or info.get("request_id") or "")
    record = rollout_from_items(trace_id, [span_item(s) for s in spans])
    if record is None:
        return None
    record["uid"] = f"mlflow-{trace_id}"
    record.setdefault("metrics", {})["mlflow_trace"] = trace_id
    return record  # type: ignore[return-value]


def trace_run_id(info: dict[str, Any]) -> str | None:
    return (info.get("trace_metadata") or info.get("request_metadata") or {}).get("mlflow.sourceRun")
