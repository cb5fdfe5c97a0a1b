"""A small OpenAI-compatible chat server on loopback, started by the tests.

The judge's endpoint is an outside service (vLLM, a hosted API) that cannot run here: this is the
boundary the tests replace, and only it. It answers "yes" when the trajectory holds `trigger`,
citing the turns whose line holds it, and counts the requests it got per `marker-N` in the text,
so a test can tell whether a rollout was judged twice.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JudgeServer:
    def __init__(self, *, trigger: str, api_key: str) -> None:
        self.trigger = trigger
        self.api_key = api_key
        self.delay = 0.0
        self.requests: Counter[str] = Counter()
        self.unauthorized = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": "no such path"})
                    return
                if self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    server.unauthorized += 1
                    self._send(401, {"error": {"message": "bad key"}})
                    return
                self._send(200, server.answer(body))

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        marker = re.search(r"marker-\d+", text)
        self.requests[marker.group(0) if marker else "?"] += 1
        time.sleep(self.delay)
        trajectory = text.split("Trajectory:", 1)[-1]
        cites = sorted({int(m.group(1)) for line in trajectory.splitlines() if self.trigger in line
                        for m in [re.match(r"\[turn (\d+)\]", line)] if m})
        yes = bool(cites)
        verdict = {"answer": "yes" if yes else "no", "citations": cites,
                   "explanation": f"The agent says '{self.trigger}'." if yes else "It keeps working."}
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": json.dumps(verdict)}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
