"""A small OpenAI-compatible chat server on loopback for the OTLP tests.

The real model server is the boundary that cannot run here (no model weights on this machine);
this one answers like it: a tool call when the conversation has no tool result yet, else the
final answer built from the tool's result; the forecaster model answers one line.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _reply(request: dict[str, Any], n: int) -> dict[str, Any]:
    messages = request["messages"]
    model = request["model"]
    if model == "forecaster-mini":
        message: dict[str, Any] = {"role": "assistant", "content": "Cloudy, light wind."}
        finish = "stop"
    elif not any(m.get("role") == "tool" for m in messages):
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{n}", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Zürich"})}}]}
        finish = "tool_calls"
    else:
        temp = json.loads(messages[-1]["content"])["temp_c"]
        message = {"role": "assistant", "content": f"It is {temp}°C in Zürich. <script>alert(1)</script>"}
        finish = "stop"
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_800_000_000, "model": f"{model}-v1",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10 + len(messages), "completion_tokens": 7, "total_tokens": 17 + len(messages)}}


class StubOpenAI:
    def __init__(self) -> None:
        self.count = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.count += 1
                data = json.dumps(_reply(body, stub.count)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StubOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
