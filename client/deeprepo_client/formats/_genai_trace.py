"""The spans of one trace into one rollout record (pure). Used by the OTLP receiver and the MLflow
importer (whose spans are translated to GenAI attributes first).

The trace is walked from its roots in time order. Chat spans at the top (or under the outermost
`invoke_agent`) are the agent's own model calls: their messages become turns, one assistant turn
a call with its tokens and latency. `execute_tool` spans fill the tool calls the model asked for
(matched by call id, else the latest assistant turn before them). A model call under a tool or
under a nested agent is a sub-LLM call of that tool, kept as its nested call.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ._genai_messages import span_messages

LLM_OPS = {"chat", "text_completion", "generate_content"}
TOOL_OPS = {"execute_tool"}
AGENT_OPS = {"invoke_agent", "create_agent"}

# RL attributes, as verl's rollout traces and hand-made episode spans write them.
STEP_KEYS = ("step", "rl.step", "deeprepo.step", "training.step", "global_step")
SAMPLE_KEYS = ("sample_index", "rl.sample_index", "rollout_n", "rl.rollout_n", "rl.episode.index",
               "deeprepo.sample_index")
REWARD_KEYS = ("reward", "rl.reward", "deeprepo.reward")
EXAMPLE_KEYS = ("example_key", "deeprepo.example_key", "example_id", "rl.example_id", "rl.group.uid",
                "rl.group.id", "group_id", "task_id", "rl.task_id")


def _op(span: dict[str, Any]) -> str:
    op = span["attributes"].get("gen_ai.operation.name")
    if isinstance(op, str) and op:
        return op
    head = span["name"].split(" ", 1)[0]
    return head if head in LLM_OPS | TOOL_OPS | AGENT_OPS else ""


def _int(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _int32(value: Any) -> int | None:
    """Step and sample index are int columns: a value past them is dropped (the root span's
    attributes keep it), not a batch the database refuses and an exporter re-sends forever."""
    n = _int(value)
    return n if n is not None and -(2**31) <= n < 2**31 else None


def _float(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None


def _seconds(span: dict[str, Any]) -> float | None:
    if not span["start_ns"] or span["end_ns"] < span["start_ns"]:
        return None
    return (span["end_ns"] - span["start_ns"]) / 1e9


def _error(span: dict[str, Any]) -> str | None:
    status = span.get("status") or {}
    if status.get("code") == 2:
        return status.get("message") or span["attributes"].get("error.type") or "error"
    return None


class _Trace:
    """Spans by id with their children and their records (span events + log records)."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.spans: dict[str, dict[str, Any]] = {}
        self.records: dict[str, list[dict[str, Any]]] = {}
        for it in items:
            data = it.get("data") or {}
            if it["kind"] == "span":
                self.spans[it["key"]] = {**it, "attributes": data.get("attributes") or {},
                                         "status": data.get("status")}
                self.records.setdefault(it["key"], []).extend(data.get("events") or [])
            else:
                rec = {"time_ns": it["start_ns"], **data}
                self.records.setdefault(it["span_id"], []).append(rec)
        self.children: dict[str, list[dict[str, Any]]] = {}
        roots = []
        for span in self.spans.values():
            if span["span_id"] in self.spans:
                self.children.setdefault(span["span_id"], []).append(span)
            else:
                roots.append(span)
        for kids in self.children.values():
            kids.sort(key=lambda s: s["start_ns"])
        self.roots = sorted(roots, key=lambda s: s["start_ns"])
        self.top_llm: list[dict[str, Any]] = []
        self.top_tools: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def messages(self, span: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]], list[dict[str, Any]]]:
        return span_messages(span["attributes"], self.records.get(span["key"], []))

    def walk(self, span: dict[str, Any], parent_call: dict[str, Any] | None, in_agent: bool) -> None:
        op = _op(span)
        if op in LLM_OPS and parent_call is None:
            self.top_llm.append(span)
            call = None
        elif op in LLM_OPS:
            call = self._llm_call(span)
        elif op in TOOL_OPS or (op in AGENT_OPS and (in_agent or parent_call is not None)):
            call = self._tool_call(span, op)
            if parent_call is None:
                self.top_tools.append((span, call))
        else:
            call = parent_call
            in_agent = in_agent or op in AGENT_OPS
        if call is not None and call is not parent_call and parent_call is not None:
            parent_call.setdefault("sub_calls", []).append(call)
        for child in self.children.get(span["key"], []):
            self.walk(child, call, in_agent)

    def _llm_call(self, span: dict[str, Any]) -> dict[str, Any]:
        attrs = span["attributes"]
        _, inputs, outputs = self.messages(span)
        out_text = "\n".join(m["text"] for m in outputs if m["text"]) or None
        return {"name": span["name"] or "chat",
                "model": attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model"),
                "arguments": [{"role": m["role"], "content": m["text"]} for m in inputs] or None,
                "output": out_text, "input_tokens": _int(attrs.get("gen_ai.usage.input_tokens")),
                "output_tokens": _int(attrs.get("gen_ai.usage.output_tokens")),
                "duration": _seconds(span), "is_error": _error(span) is not None}

    def _tool_call(self, span: dict[str, Any], op: str) -> dict[str, Any]:
        attrs = span["attributes"]
        name = attrs.get("gen_ai.tool.name") or attrs.get("gen_ai.agent.name") or span["name"]
        result = attrs.get("gen_ai.tool.call.result")
        error = _error(span)
        call: dict[str, Any] = {
            "call_id": attrs.get("gen_ai.tool.call.id"), "name": str(name),
            "arguments": attrs.get("gen_ai.tool.call.arguments"), "duration": _seconds(span),
            "output": None if result is None else (result if isinstance(result, str) else str(result)),
            "is_error": error is not None, "_start": span["start_ns"],
        }
        if error and call["output"] is None:
            call["output"] = error
        if op in AGENT_OPS:
            call["name"] = f"agent {name}"
        return call


def _find_rl(spans: list[dict[str, Any]], keys: tuple[str, ...]) -> Any:
    """The first of `keys` on the spans (root first), else any `<prefix>.<key>` (`grpo.step`)."""
    for span in spans:
        for key in keys:
            value = span["attributes"].get(key)
            if value is not None:
                return value
    suffixes = tuple("." + k for k in keys if "." not in k)
    for span in spans:
        for key, value in span["attributes"].items():
            if key.endswith(suffixes) and not key.startswith("gen_ai.") and value is not None:
                return value
    return None


def _key(m: dict[str, Any]) -> tuple[str, str]:
    return m["role"], (m["text"] or "")[:200]


class _Turns:
    """Turns of the top-level model calls; each call re-sends the history, only what is new is kept."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.conversation: list[tuple[str, str]] = []
        self.calls_by_id: dict[str, dict[str, Any]] = {}
        self.assistants: list[tuple[int, dict[str, Any]]] = []  # (start ns of the call, turn)
        self.prompt: list[dict[str, Any]] = []
        self.executed: set[int] = set()  # calls already filled by a tool span

    def add(self, span: dict[str, Any], system: str | None, inputs: list[dict[str, Any]],
            outputs: list[dict[str, Any]]) -> None:
        keys = [_key(m) for m in inputs]
        if self.conversation and keys[: len(self.conversation)] == self.conversation:
            new = inputs[len(self.conversation):]
        elif self.conversation and keys and keys == self.conversation[: len(keys)]:
            new = []
        else:
            new = inputs
        if not self.turns:
            if system:
                self.turns.append({"role": "system", "content": system})
            self.prompt = [{"role": t["role"], "content": t["content"]} for t in self.turns]
            self.prompt += [{"role": m["role"], "content": m["text"]} for m in inputs if m["role"] != "assistant"]
        for m in new:
            self._input(m)
        self.conversation = keys + [_key(m) for m in outputs]
        self._output(span, outputs)

    def _input(self, m: dict[str, Any]) -> None:
        for res in m["results"]:
            call = self.calls_by_id.get(res["id"] or "")
            if call is not None:
                call["output"] = res["text"]
            else:
                self.turns.append({"role": "tool", "content": res["text"], "metadata": {"tool_call_id": res["id"]}})
        if m["results"] and not m["text"]:
            return
        turn: dict[str, Any] = {"role": m["role"], "content": m["text"]}
        if m["calls"]:
            turn["tool_calls"] = [self._call(c) for c in m["calls"]]
        self.turns.append(turn)

    def _call(self, c: dict[str, Any]) -> dict[str, Any]:
        call = {"call_id": c["id"], "name": c["name"], "arguments": c["arguments"]}
        if c["id"]:
            self.calls_by_id[c["id"]] = call
        return call

    def _output(self, span: dict[str, Any], outputs: list[dict[str, Any]]) -> None:
        attrs = span["attributes"]
        first = outputs[0] if outputs else {"text": None, "reasoning": None, "calls": []}
        turn: dict[str, Any] = {
            "role": "assistant", "content": first["text"],
            "model": attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model"),
            "input_tokens": _int(attrs.get("gen_ai.usage.input_tokens")),
            "output_tokens": _int(attrs.get("gen_ai.usage.output_tokens")),
            "latency": _seconds(span),
            "metadata": {k: v for k, v in (("finish_reasons", attrs.get("gen_ai.response.finish_reasons")),
                                           ("response_id", attrs.get("gen_ai.response.id")),
                                           ("span_id", span["key"])) if v},
        }
        if first["reasoning"]:
            turn["reasoning"] = first["reasoning"]
        if first["calls"]:
            turn["tool_calls"] = [self._call(c) for c in first["calls"]]
        self.turns.append(turn)
        self.assistants.append((span["start_ns"], turn))

    def attach(self, tool: dict[str, Any]) -> None:
        """An executed tool: fill the call the model made, or add it to the turn before it. What the
        tool span says wins over the copy of its result in the model's next input (an agent may
        shorten that copy)."""
        start = tool.pop("_start", 0)
        call = self.calls_by_id.get(tool.get("call_id") or "")
        if call is None and not tool.get("call_id"):
            # no id (MLflow tool spans): the first call of that name the model made before it
            call = next((c for s, t in self.assistants if s <= start for c in t.get("tool_calls") or []
                         if c.get("name") == tool["name"] and id(c) not in self.executed), None)
        if call is not None:
            self.executed.add(id(call))
        if call is None:
            before = [t for s, t in self.assistants if s <= start] or [t for _, t in self.assistants[:1]]
            if not before:
                self.turns.append({"role": "assistant", "content": None, "tool_calls": [tool]})
                return
            before[-1].setdefault("tool_calls", []).append(tool)
            return
        for key, value in tool.items():
            if value is not None and (call.get(key) is None or key in ("output", "duration", "sub_calls", "is_error")):
                call[key] = value


def _strip(call: dict[str, Any]) -> None:
    call.pop("_start", None)
    for sub in call.get("sub_calls") or []:
        _strip(sub)


KEY_LABEL_CHARS = 48


def _example_key(spans: list[dict[str, Any]], prompt: list[dict[str, Any]], trace_id: str) -> str:
    value = _find_rl(spans, EXAMPLE_KEYS)
    if value is not None:
        return str(value)
    users = [m["content"] for m in prompt if m["role"] == "user" and m["content"]]
    if users:
        # the question a person can read on the examples page, and a hash of every user message
        # (which alone decides identity, so two questions starting alike stay two examples)
        digest = hashlib.sha256("\n".join(users).encode("utf-8", "replace")).hexdigest()[:16]
        label = " ".join(str(users[-1]).split())
        if len(label) > KEY_LABEL_CHARS:
            label = label[:KEY_LABEL_CHARS - 1].rstrip() + "…"
        return f"{label} #{digest}"
    return f"trace:{trace_id}"


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def rollout_from_items(trace_id: str, items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The rollout record (deeprepo_client.records.RolloutRecord) of one trace, None without spans."""
    trace = _Trace(items)
    if not trace.spans:
        return None
    for root in trace.roots:
        trace.walk(root, None, False)
    turns = _Turns()
    for span in sorted(trace.top_llm, key=lambda s: s["start_ns"]):
        turns.add(span, *trace.messages(span))
    for _, tool in sorted(trace.top_tools, key=lambda st: st[0]["start_ns"]):
        turns.attach(tool)
    for turn in turns.turns:
        for call in turn.get("tool_calls") or []:
            _strip(call)
    root = trace.roots[0]
    ordered = [root, *sorted((s for s in trace.spans.values() if s is not root), key=lambda s: s["start_ns"])]
    assistants = [t for _, t in turns.assistants]
    finish = (assistants[-1].get("metadata") or {}).get("finish_reasons") if assistants else None
    errors = [f"{s['name']}: {e}" for s in ordered if (e := _error(s))]
    start = min(s["start_ns"] for s in trace.spans.values())
    end = max(s["end_ns"] for s in trace.spans.values())
    return {
        "uid": f"otlp-{trace_id}",
        "example_key": _example_key(ordered, turns.prompt, trace_id),
        "prompt": turns.prompt or None,
        "step": _int32(_find_rl(ordered, STEP_KEYS)),
        "sample_index": _int32(_find_rl(ordered, SAMPLE_KEYS)),
        "reward": _float(_find_rl(ordered, REWARD_KEYS)),
        "input_tokens": _sum([t.get("input_tokens") for t in assistants]),
        "output_tokens": _sum([t.get("output_tokens") for t in assistants]),
        "duration": (end - start) / 1e9 if start and end >= start else None,
        "error": errors[0] if errors else None,
        "stop_condition": finish[-1] if isinstance(finish, list) and finish else None,
        "final_answer": next((t["content"] for t in reversed(assistants) if t.get("content")), None),
        "metrics": {"trace_id": trace_id, "spans": len(trace.spans), **_root_values(root)},
        "turns": turns.turns,
    }


def _root_values(root: dict[str, Any]) -> dict[str, Any]:
    """The root span's own small attributes (an episode's index, a seed, a task name), kept beside
    the rollout; message bodies and the conventions' own keys are elsewhere already."""
    out: dict[str, Any] = {}
    for key, value in root["attributes"].items():
        if key.startswith("gen_ai.") or len(out) >= 50:
            continue
        if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 200):
            out[key] = value
    return out


def run_model(items: list[dict[str, Any]]) -> str:
    """The model of the first model call among `items`, to name the run's model."""
    for it in items:
        attrs = (it.get("data") or {}).get("attributes") or {}
        model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
        if it["kind"] == "span" and isinstance(model, str) and model:
            return model[:500]
    return ""
