"""HTTP to the server, and draining a spool through it. Used by the background sender and `deeprepo sync`."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

import httpx

from deeprepo_client.spool import Spool


class ServerAway(Exception):
    """Transient: connection refused, timeout, 5xx, 429. Try again later; nothing is lost."""


class Refused(Exception):
    """Permanent: the server answered 4xx with a reason. Retrying the same body cannot help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Transport:
    def __init__(self, url: str, api_key: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.client = httpx.Client(
            base_url=f"{self.url}/api/v1",
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            timeout=timeout,
        )

    def close(self) -> None:
        self.client.close()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        # Encoded here, not with httpx's json=: metric values may be NaN/Infinity on purpose.
        content = None if body is None else json.dumps(body, allow_nan=True).encode()
        try:
            res = self.client.request(method, path, content=content)
        except httpx.HTTPError as exc:
            raise ServerAway(f"{type(exc).__name__}: {exc}") from exc
        if res.status_code >= 500 or res.status_code in (408, 429):
            raise ServerAway(f"server answered {res.status_code}")
        if res.status_code >= 400:
            try:
                message = res.json().get("error") or res.text
            except ValueError:
                message = res.text[:200]
            raise Refused(res.status_code, message)
        return res.json() if res.content else None


def backoff(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
    """Exponential backoff with full jitter."""
    return random.uniform(0, min(cap, base * math.pow(2, attempt)))


@dataclass
class DrainResult:
    sent: int = 0
    points: int = 0
    rollouts: int = 0
    rejected: list[str] = field(default_factory=list)


def ensure_run(spool: Spool, transport: Transport) -> str:
    """The server id of the spooled run, creating it (idempotently, by its local id) if needed."""
    meta = spool.read_meta()
    if meta.get("server_id"):
        return str(meta["server_id"])
    payload = dict(meta["create"])
    payload.setdefault("external_id", meta["local_id"])
    created = transport.request("POST", "/runs", payload)
    meta["server_id"] = created["id"]
    spool.write_meta(meta)
    return str(created["id"])


def send_op(transport: Transport, run_id: str, op: dict[str, Any]) -> dict[str, Any] | None:
    kind, body = op["kind"], op["body"]
    if kind in ("metrics", "rollouts"):
        try:
            return transport.request("POST", f"/runs/{run_id}/{kind}", body)
        except Refused as exc:
            if exc.status == 413 and isinstance(body, list) and len(body) > 1:
                half = len(body) // 2  # too big for the server: send it in halves
                send_op(transport, run_id, {"kind": kind, "body": body[:half]})
                return send_op(transport, run_id, {"kind": kind, "body": body[half:]})
            raise
    if kind == "update":
        return transport.request("PATCH", f"/runs/{run_id}", body)
    if kind == "finish":
        return transport.request("POST", f"/runs/{run_id}/finish", body)
    raise Refused(0, f"unknown op kind {kind!r}")


def drain(spool: Spool, transport: Transport) -> DrainResult:
    """Send every op after the acked one, in order. Raises ServerAway when the server is away."""
    result = DrainResult()
    run_id = ensure_run(spool, transport)
    for op in spool.iter_ops(after=spool.acked()):
        try:
            send_op(transport, run_id, op)
            result.sent += 1
            if op["kind"] == "metrics":
                result.points += sum(len(p.get("values", {})) for p in op["body"])
            elif op["kind"] == "rollouts":
                result.rollouts += len(op["body"])
        except Refused as exc:
            spool.reject(op, exc.message)
            result.rejected.append(f"op {op['seq']} ({op['kind']}): {exc.message}")
        spool.ack(op["seq"])
    return result
