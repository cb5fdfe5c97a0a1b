"""What /v1/traces says to bad requests: wrong Content-Type, no key, unreadable bodies, spans
without ids among good ones (OTLP partial success), 10 MB attributes, gzip bombs."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from deeprepo_web.accounts.services import api_key_create
from deeprepo_web.runs.models import Rollout, Run, ToolCall
from tests.otlp.bodies import TRACE, agent_trace, body, span
from tests.otlp.test_ingest import post

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("kind", ["text/plain", "application/grpc", "multipart/form-data; boundary=x"])
def test_wrong_content_type_is_415_and_says_what_to_send(client: Any, team: Any, kind: str) -> None:
    r = client.post("/v1/traces", data=body(agent_trace()), content_type=kind,
                    headers={"Authorization": f"Bearer {team.key}"})
    assert r.status_code == 415
    assert "application/x-protobuf or application/json" in r.json()["message"]
    assert not Run.objects.exists()


def test_key_is_required_and_checked(client: Any, team: Any) -> None:
    r = client.post("/v1/traces", data=body(agent_trace()), content_type="application/json")
    assert r.status_code == 401 and "Authorization: Bearer" in r.json()["message"]
    _, reader = api_key_create(project=team.project, name="reader", scopes=["read"])
    assert post(client, reader, body(agent_trace())).status_code == 403
    r = post(client, team.other_key, body(agent_trace()), **{"x-deeprepo-project": "demo"})
    assert r.status_code == 404  # another project's key cannot write into demo
    assert not Run.objects.filter(project=team.project).exists()
    assert client.get("/v1/traces").status_code == 405


@pytest.mark.parametrize(("data", "kind", "says"), [
    (b"\xff\xff\xff not protobuf", "application/x-protobuf", "not an OTLP traces protobuf message"),
    (b"{not json", "application/json", "not JSON"),
    (b'{"resourceLogs": []}', "application/json", "'resourceSpans' list"),
])
def test_unreadable_body_is_400_with_a_status(client: Any, team: Any, data: bytes, kind: str, says: str) -> None:
    r = post(client, team.key, data, kind)
    assert r.status_code == 400 and r["Content-Type"] == kind
    if kind == "application/json":
        assert says in r.json()["message"]
    else:
        assert says.encode() in r.content  # a google.rpc.Status: code 3, then the message


def test_bad_spans_are_rejected_the_otlp_way_and_the_rest_kept(client: Any, team: Any) -> None:
    spans = [*agent_trace(), span("zz", "", "no ids", 1, 2), {"traceId": TRACE, "spanId": "b" * 16,
                                                              "startTimeUnixNano": "soon"}]
    r = post(client, team.key, body(spans))
    assert r.status_code == 200
    partial = r.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "rejected a span without a hex traceId" in partial["errorMessage"]
    rollout = Rollout.objects.get()
    assert rollout.metrics["spans"] == 6 and rollout.final_answer == "Paris"


def test_ten_megabyte_attributes_are_cut_and_said_so(client: Any, team: Any, settings: Any, tmp_path: Any) -> None:
    settings.DATA_DIR = tmp_path
    huge = "x" * (10 << 20)
    spans = agent_trace()
    spans[2]["attributes"] = [a for a in spans[2]["attributes"] if a["key"] != "gen_ai.tool.call.result"]
    spans[2]["attributes"].append({"key": "gen_ai.tool.call.result", "value": {"stringValue": huge}})
    spans[0]["attributes"].append({"key": "blob.of.noise", "value": {"stringValue": huge}})
    r = post(client, team.key, body(spans))
    assert r.status_code == 200
    message = r.json()["partialSuccess"]["errorMessage"]
    assert "span a000000000000003 attribute 'gen_ai.tool.call.result': a value of 10,485,760 characters was cut" in message
    assert r.json()["partialSuccess"]["rejectedSpans"] == "0"
    call = ToolCall.objects.get(name="search")
    assert call.output_size == 4 << 20 and call.output_blob  # the kept part went to the blob store
    rollout = Rollout.objects.get()
    assert "blob.of.noise" not in rollout.metrics  # long strings are not rollout metrics
    assert rollout.final_answer == "Paris"


def test_gzip_bomb_and_bad_gzip(client: Any, team: Any) -> None:
    bomb = gzip.compress(b"{" + b" " * (80 << 20) + b"}")
    r = post(client, team.key, bomb, **{"Content-Encoding": "gzip"})
    assert r.status_code == 413 and "unpacks past" in r.json()["message"]
    r = post(client, team.key, body(agent_trace()), **{"Content-Encoding": "gzip"})
    assert r.status_code == 400 and "not gzip data" in r.json()["message"]
    r = post(client, team.key, body(agent_trace()), **{"Content-Encoding": "br"})
    assert r.status_code == 415
    assert not Run.objects.exists()


def test_protobuf_partial_success(client: Any, team: Any) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    good = spans.add(trace_id=bytes.fromhex(TRACE), span_id=b"\x01" * 8, name="chat m", start_time_unix_nano=5,
                     end_time_unix_nano=9)
    good.attributes.add(key="gen_ai.operation.name").value.string_value = "chat"
    spans.add(trace_id=b"\x01\x02", span_id=b"\x01" * 8, name="short trace id")
    r = post(client, team.key, req.SerializeToString(), "application/x-protobuf")
    answer = ExportTraceServiceResponse.FromString(r.content)
    assert r.status_code == 200 and answer.partial_success.rejected_spans == 1
    assert "16-byte trace id" in answer.partial_success.error_message
    assert json.loads(json.dumps(Rollout.objects.get().metrics))["spans"] == 1


def test_another_projects_key_cannot_reach_a_run_by_its_id(client: Any, team: Any) -> None:
    assert post(client, team.key, body(agent_trace()), **{"x-deeprepo-run": "mine"}).status_code == 200
    mine = Run.objects.get(name="mine")
    r = post(client, team.other_key, body(agent_trace(trace="2" * 32)), **{"x-deeprepo-run": mine.public_id})
    assert r.status_code == 200
    assert Rollout.objects.filter(run=mine).count() == 1  # untouched
    stray = Run.objects.get(project=team.other_project)
    assert stray.name == mine.public_id and Rollout.objects.filter(run=stray).count() == 1


def test_out_of_range_rl_numbers_do_not_break_the_batch(client: Any, team: Any) -> None:
    spans = agent_trace()
    spans[0]["attributes"] = [a for a in spans[0]["attributes"] if a["key"] != "step"]
    spans[0]["attributes"].append({"key": "step", "value": {"intValue": str(10**12)}})
    assert post(client, team.key, body(spans)).status_code == 200
    rollout = Rollout.objects.get()
    assert rollout.step is None and rollout.metrics["step"] == 10**12 and rollout.sample_index == 2
