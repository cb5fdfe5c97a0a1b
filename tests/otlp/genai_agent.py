"""A tiny agent run by the OTLP tests in a child process: the real openai client, instrumented by
opentelemetry-instrumentation-openai-v2, exporting with the real OTLP exporter named on the command
line (proto or json). It learns where to send only from OTEL_EXPORTER_OTLP_ENDPOINT and
OTEL_EXPORTER_OTLP_HEADERS, like any agent pointed at us; the model server is STUB_OPENAI_URL.

Two episodes of one GRPO group at step 3: chat -> execute_tool get_weather (which asks a smaller
model for a one-line forecast: a sub-LLM call) -> chat. The episode span carries the RL keys.
"""

from __future__ import annotations

import json
import os
import sys

import openai
from opentelemetry import trace
from opentelemetry._logs import set_logger_provider
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather now in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def main(encoding: str) -> None:
    if encoding == "json":
        from opentelemetry.exporter.otlp.json.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    traces = TracerProvider(resource=Resource.create({}))  # service.name from OTEL_SERVICE_NAME
    traces.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    logs = LoggerProvider(resource=Resource.create({}))
    logs.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    trace.set_tracer_provider(traces)
    set_logger_provider(logs)
    OpenAIInstrumentor().instrument(tracer_provider=traces, logger_provider=logs)
    tracer = trace.get_tracer("grpo.rollout")
    client = openai.OpenAI(base_url=os.environ["STUB_OPENAI_URL"], api_key="not-a-key")
    for episode in range(2):
        attrs = {"rl.step": 3, "rl.sample_index": episode, "rl.group.uid": "weather-zurich"}
        with tracer.start_as_current_span("rollout.episode", attributes=attrs) as span:
            messages: list[dict] = [{"role": "system", "content": "You are a weather assistant. Use tools."},
                                    {"role": "user", "content": f"Weather in Zürich? <b>episode {episode}</b>"}]
            first = client.chat.completions.create(model="policy-0.5b", messages=messages, tools=TOOLS)
            call = first.choices[0].message.tool_calls[0]
            with tracer.start_as_current_span(f"execute_tool {call.function.name}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name,
                    "gen_ai.tool.call.id": call.id}) as tool:
                summary = client.chat.completions.create(
                    model="forecaster-mini", messages=[{"role": "user", "content": "One line: Zürich now"}])
                result = json.dumps({"temp_c": 18 + episode, "note": summary.choices[0].message.content})
                tool.set_attribute("gen_ai.tool.call.result", result)
            messages.append(first.choices[0].message.model_dump(exclude_none=True))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
            final = client.chat.completions.create(model="policy-0.5b", messages=messages, tools=TOOLS)
            span.set_attribute("rl.reward", 1.0 if "18" in (final.choices[0].message.content or "") else 0.0)
    traces.shutdown()
    logs.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
