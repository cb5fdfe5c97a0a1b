"""POST /v1/traces and /v1/logs through Django's client: the captured protobuf bodies of a real
instrumented agent, hand-made JSON traces (nesting, order, repeats), gzip."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from deeprepo_web.runs.models import Rollout, Run, ToolCall, Turn
from tests.otlp.bodies import TRACE, agent_trace, body

pytestmark = pytest.mark.django_db

PB = "application/x-protobuf"


def post(client: Any, key: str, data: bytes, kind: str = "application/json", path: str = "/v1/traces",
         **headers: str) -> Any:
    return client.post(path, data=data, content_type=kind, headers={"Authorization": f"Bearer {key}", **headers})


def _sample(samples: Path, name: str) -> bytes:
    return (samples / "otel-genai" / "otlp-protobuf" / name).read_bytes()


def test_captured_protobuf_bodies_logs_first(client: Any, team: Any, samples: Path) -> None:
    # The log records (message content) arrive before their spans: the rollout waits for the spans.
    r = post(client, team.key, _sample(samples, "002_logs.bin"), PB, path="/v1/logs")
    assert r.status_code == 200 and r["Content-Type"] == PB
    assert not Rollout.objects.exists()
    r = post(client, team.key, _sample(samples, "001_traces.bin"), PB)
    assert r.status_code == 200
    answer = ExportTraceServiceResponse.FromString(r.content)
    assert answer.partial_success.rejected_spans == 0 and not answer.partial_success.error_message
    run = Run.objects.get(project=team.project, name="grpo-rollout-worker")
    assert run.config["otlp_resource"]["deployment.environment"] == "local-test"
    rollouts = list(Rollout.objects.filter(run=run).order_by("sample_index"))
    assert [(r.sample_index, r.reward, r.example.key) for r in rollouts] == [(0, 1.0, "group-0"), (1, 1.0, "group-0")]
    turns = list(rollouts[0].turns.order_by("index"))
    assert [t.role for t in turns] == ["system", "user", "assistant", "assistant"]
    assert turns[1].content == "What's the weather in Zürich?"
    assert turns[3].content == "It is 18°C and cloudy in Zürich right now."
    call = ToolCall.objects.get(turn=turns[2])
    assert (call.name, call.call_id, call.arguments) == ("get_weather", "call_stub0001", {"city": "Zürich", "unit": "celsius"})
    assert json.loads(call.output) == {"temp_c": 18, "sky": "cloudy"}
    assert (rollouts[0].input_tokens, rollouts[0].output_tokens) == (67 + 77, 18 + 18)
    # The same bodies again (an exporter's retry): nothing more.
    for name, path in (("001_traces.bin", "/v1/traces"), ("002_logs.bin", "/v1/logs")):
        assert post(client, team.key, _sample(samples, name), PB, path=path).status_code == 200
    assert Rollout.objects.filter(run=run).count() == 2 and Turn.objects.filter(rollout__run=run).count() == 8


def _shape(run: Run) -> list[Any]:
    out = []
    for r in Rollout.objects.filter(run=run).order_by("uid"):
        turns = [(t.role, t.content, t.model, t.input_tokens) for t in r.turns.order_by("index")]
        calls = [(c.name, c.parent.name if c.parent else None, c.output, c.model, c.input_tokens)
                 for c in ToolCall.objects.filter(rollout=r).select_related("parent").order_by("index", "id")]
        out.append((r.uid, r.step, r.sample_index, r.reward, r.example.key, r.input_tokens, r.final_answer,
                    turns, calls))
    return out


def test_nested_agent_trace_in_pieces_out_of_order_is_one_rollout(client: Any, team: Any) -> None:
    spans = agent_trace()
    assert post(client, team.key, body(spans), **{"x-deeprepo-run": "whole"}).status_code == 200
    whole = Run.objects.get(name="whole")
    [(uid, step, sample, reward, example, in_tokens, answer, turns, calls)] = _shape(whole)
    assert (uid, step, sample, reward, example, in_tokens, answer) == (f"otlp-{TRACE}", 7, 2, 0.5, "geo-1", 80, "Paris")
    assert turns == [("user", "What is the capital of France?", "", None),
                     ("assistant", "", "policy", 30), ("assistant", "Paris", "policy", 50)]
    # the helper agent inside the tool is a nested call, its model call nested under it
    assert calls == [("search", None, "Paris is the capital.", "", None),
                     ("agent reader", "search", "", "", None),
                     ("chat reader-model", "agent reader", "Paris.", "reader-model", 100)]
    rollout = Rollout.objects.get(run=whole)
    assert rollout.metrics["my.custom.flag"] is True  # an unknown attribute is kept, not refused
    # The same spans, children first and the root last, one request each, some twice.
    for s in [*reversed(spans), spans[2], spans[0]]:
        assert post(client, team.key, body([s]), **{"x-deeprepo-run": "pieces"}).status_code == 200
    pieces = Run.objects.get(name="pieces")
    assert _shape(pieces) == _shape(whole)


def test_run_named_by_resource_or_by_run_id(client: Any, team: Any) -> None:
    post(client, team.key, body(agent_trace(), deeprepo__run="from-resource", service__name="svc"))
    run = Run.objects.get(name="from-resource")
    other = "1" * 32
    r = post(client, team.key, body(agent_trace(trace=other, reward=1.0)), **{"x-deeprepo-run": run.public_id})
    assert r.status_code == 200
    assert sorted(Rollout.objects.filter(run=run).values_list("reward", flat=True)) == [0.5, 1.0]


def test_gzip_bodies(client: Any, team: Any, samples: Path) -> None:
    data = gzip.compress(_sample(samples, "001_traces.bin"))
    r = post(client, team.key, data, PB, **{"Content-Encoding": "gzip"})
    assert r.status_code == 200
    assert Rollout.objects.filter(run__name="grpo-rollout-worker").count() == 2
    # without the log records the turns have no text, but tokens and tool calls are there
    assert ToolCall.objects.filter(rollout__run__name="grpo-rollout-worker", name="get_weather").count() == 2
