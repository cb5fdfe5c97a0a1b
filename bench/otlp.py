"""OTLP ingest throughput: agent traces as an OpenTelemetry SDK's batch exporter sends them.

Each trace is one episode: an invoke_agent root, 4 chat spans (messages of ~1 KB, tokens), 3
execute_tool spans, one of them with a nested sub-LLM chat: 9 spans. Traces run 16 at a time and
their spans are cut into requests of 512 (the SDK's default batch) in the order they end, so most
traces are split over two requests and rebuilt when their last spans arrive (root last).
Target: >= 2,000 spans/s. Last line: {"spans_per_s", "spans", "traces", "rollouts", ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import api_key, scratch_database, web_server  # noqa: E402

TEXT = ("The agent reads the failing test and proposes a small patch to the parser module. " * 14)[:1000]


def _span(trace: int, n: int, parent: int, name: str, start: int, end: int, **attrs: Any) -> Span:
    span = Span(trace_id=trace.to_bytes(16, "big"), span_id=(trace * 16 + n).to_bytes(8, "big"),
                parent_span_id=(trace * 16 + parent).to_bytes(8, "big") if parent else b"", name=name,
                start_time_unix_nano=start, end_time_unix_nano=end)
    for key, value in attrs.items():
        target = span.attributes.add(key=key.replace("__", ".")).value
        if isinstance(value, float):
            target.double_value = value
        elif isinstance(value, int):
            target.int_value = value
        else:
            target.string_value = value
    return span


def _msgs(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def _final() -> list[dict[str, Any]]:
    return [{"role": "assistant", "parts": [{"type": "text", "content": "All tests pass now."}]}]


def episode(trace: int, t0: int) -> list[Span]:
    """The spans of one episode, in the order they end (children before their parents)."""
    out: list[Span] = []
    history = [{"role": "user", "parts": [{"type": "text", "content": f"Task {trace}: {TEXT}"}]}]
    t = t0
    for i in range(4):
        call = [{"role": "assistant", "parts": [{"type": "text", "content": TEXT},
                                                {"type": "tool_call", "id": f"c{i}", "name": "run_tests",
                                                 "arguments": {"path": f"tests/t{i}.py"}}]}]
        out.append(_span(trace, 2 + 2 * i, 1, "chat policy", t, t + 900, gen_ai__operation__name="chat",
                         gen_ai__request__model="policy-7b", gen_ai__usage__input_tokens=900 + 300 * i,
                         gen_ai__usage__output_tokens=120, gen_ai__input__messages=json.dumps(history),
                         gen_ai__output__messages=json.dumps(call if i < 3 else _final())))
        history += call
        t += 1000
        if i < 3:
            if i == 1:
                out.append(_span(trace, 12, 3 + 2 * i, "chat judge", t + 10, t + 400, gen_ai__operation__name="chat",
                                 gen_ai__request__model="judge-mini", gen_ai__usage__input_tokens=300,
                                 gen_ai__usage__output_tokens=20, gen_ai__output__messages=_msgs("assistant", "ok")))
            out.append(_span(trace, 3 + 2 * i, 1, "execute_tool run_tests", t, t + 500,
                             gen_ai__operation__name="execute_tool", gen_ai__tool__name="run_tests",
                             gen_ai__tool__call__id=f"c{i}", gen_ai__tool__call__result=TEXT[:400]))
            history.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{i}",
                                                       "response": TEXT[:400]}]})
            t += 600
    out.append(_span(trace, 1, 0, "invoke_agent solver", t0 - 10, t + 10, gen_ai__operation__name="invoke_agent",
                     rl__step=trace // 64, rl__sample_index=trace % 8, rl__group__uid=f"task-{trace // 8}",
                     rl__reward=float(trace % 2)))
    return out


def bodies(traces: int, concurrent: int, batch: int) -> tuple[list[bytes], int]:
    spans: list[Span] = []
    for first in range(1, traces + 1, concurrent):
        wave = [episode(tr, 1_800_000_000_000_000_000 + first) for tr in range(first, min(traces + 1, first + concurrent))]
        # interleave the wave's spans as they would end side by side
        for i in range(max(len(w) for w in wave)):
            spans += [w[i] for w in wave if i < len(w)]
    out = []
    for start in range(0, len(spans), batch):
        req = ExportTraceServiceRequest()
        rs = req.resource_spans.add()
        rs.resource.attributes.add(key="service.name").value.string_value = "bench-agent"
        rs.scope_spans.add().spans.extend(spans[start:start + batch])
        out.append(req.SerializeToString())
    return out, len(spans)


def send(site: str, key: str, data: list[bytes], threads: int) -> float:
    def one(body: bytes) -> None:
        res = httpx.post(f"{site}/v1/traces", content=body, timeout=300,
                         headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"})
        if res.status_code != 200:
            raise RuntimeError(f"{res.status_code}: {res.text[:300]}")

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, data))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=3000)
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    url = scratch_database("deeprepo_bench_otlp")
    key = api_key(url, "bench")
    data, n_spans = bodies(args.traces, args.concurrent, args.batch)
    with web_server(url, workers=args.workers) as site:
        elapsed = send(site, key, data, args.threads)
    with psycopg.connect(url) as conn:
        rollouts = conn.execute("SELECT count(*) FROM runs_rollout").fetchone()[0]
        calls = conn.execute("SELECT count(*) FROM runs_toolcall").fetchone()[0]
    print(f"{n_spans} spans in {len(data)} requests: {elapsed:.1f}s", file=sys.stderr)
    print(json.dumps({"spans_per_s": round(n_spans / elapsed), "spans": n_spans, "requests": len(data),
                      "traces": args.traces, "rollouts": rollouts, "tool_calls": calls,
                      "seconds": round(elapsed, 2), "cores": os.cpu_count()}))


if __name__ == "__main__":
    main()
