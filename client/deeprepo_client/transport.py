"""HTTP to the server, and draining a spool through it. Used by the background sender and `deeprepo sync`."""

from __future__ import annotations

import json
import math
import random
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from deeprepo_client.spool import Cursor, RawOp, Spool


class ServerAway(Exception):
    """Transient: connection refused, timeout, 5xx, 429. Try again later; nothing is lost.
    `retry_after`: the seconds the server asked for (Retry-After), when it said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _retry_after(res: httpx.Response) -> float | None:
    try:
        return min(max(float(res.headers.get("Retry-After", "")), 0.0), 600.0)
    except ValueError:
        return None  # absent, or an HTTP date: the caller's own backoff applies


class Refused(Exception):
    """Permanent: the server answered 4xx with a reason. Retrying the same body cannot help."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class Transport:
    def __init__(self, url: str, api_key: str, timeout: float = 300.0) -> None:
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
        return self.request_raw(method, path, content)

    def request_raw(self, method: str, path: str, content: bytes | None, headers: dict[str, str] | None = None) -> Any:
        """Send a body that is JSON already (a spooled op is sent as it was written)."""
        try:
            res = self.client.request(method, path, content=content, headers=headers)
        except httpx.HTTPError as exc:
            raise ServerAway(f"{type(exc).__name__}: {exc}") from exc
        if res.status_code >= 500 or res.status_code in (408, 429):
            wait = _retry_after(res)
            raise ServerAway(f"server answered {res.status_code}" + (f", retry after {wait:g} s" if wait else ""),
                             retry_after=wait)
        if res.status_code >= 400:
            try:
                message = res.json().get("error") or res.text
            except ValueError:
                message = res.text[:200]
            raise Refused(res.status_code, message)
        return res.json() if res.content else None


def backoff(attempt: int, base: float = 0.5, cap: float = 30.0, exc: Exception | None = None) -> float:
    """Exponential backoff with full jitter; never sooner than a server's Retry-After."""
    asked = getattr(exc, "retry_after", None) or 0.0
    return max(asked, random.uniform(0, min(cap, base * math.pow(2, attempt))))


REQUEST_BYTES = 4 * 1024 * 1024  # spooled batches are joined into requests of about this size
IN_FLIGHT = 4  # requests under way at once
JOINED_HEADER = "X-Deeprepo-Batches"


@dataclass
class DrainResult:
    sent: int = 0  # ops the server took (or refused for good: either way, done)
    points: int = 0
    rollouts: int = 0
    requests: int = 0
    rejected: list[str] = field(default_factory=list)
    refused: list[tuple[RawOp, str]] = field(default_factory=list)  # not yet written to rejected.jsonl

    def add(self, other: DrainResult) -> None:
        self.sent += other.sent
        self.points += other.points
        self.rollouts += other.rollouts
        self.requests += other.requests
        self.rejected.extend(other.rejected)
        self.refused.extend(other.refused)


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
                first = send_op(transport, run_id, {"kind": kind, "body": body[:half]}) or {}
                second = send_op(transport, run_id, {"kind": kind, "body": body[half:]}) or {}
                merged: dict[str, Any] = {k: first.get(k, 0) + second.get(k, 0) for k in ("received", "stored")}
                # refused keys name their point in the request: the second half's start after the first's
                merged["refused"] = [*first.get("refused", []),
                                     *({**r, "point": r.get("point", 0) + half} for r in second.get("refused", []))]
                return merged
            raise
    if kind == "update":
        return transport.request("PATCH", f"/runs/{run_id}", body)
    if kind == "finish":
        return transport.request("POST", f"/runs/{run_id}/finish", body)
    raise Refused(0, f"unknown op kind {kind!r}")


# ------------------------------------------------------------------ batches joined into requests

_BATCH_KINDS = ("metrics", "rollouts")


@dataclass
class Group:
    """Consecutive ops sent as one request: batches of one kind joined, or one update/finish."""

    kind: str
    ops: list[RawOp]

    @property
    def last(self) -> RawOp:
        return self.ops[-1]

    def body(self) -> bytes:
        if len(self.ops) == 1:
            return self.ops[0].body
        inner = [b for b in (op.body.strip()[1:-1].strip() for op in self.ops) if b]
        return b"[" + b",".join(inner) + b"]"


def groups(ops: Iterable[RawOp], request_bytes: int) -> Iterator[Group]:
    current: Group | None = None
    size = 0
    for op in ops:
        joinable = op.kind in _BATCH_KINDS and op.body.lstrip()[:1] == b"["
        if (current is not None and joinable and current.kind == op.kind
                and size + len(op.body) <= request_bytes):
            current.ops.append(op)
            size += len(op.body)
            continue
        if current is not None:
            yield current
        current, size = Group(op.kind if joinable else f"{op.kind}!", [op]), len(op.body)
    if current is not None:
        yield current


def _send_group(transport: Transport, run_id: str, group: Group) -> DrainResult:
    """Send one group. A refused join is re-sent op by op, so only the bad batch is refused."""
    out = DrainResult(sent=len(group.ops), requests=1)
    kind = group.kind.rstrip("!")
    try:
        if kind == group.kind:
            # How many batches this request joins: a refused join is re-sent batch by batch, and
            # the server notes only refusals of single batches (on the run page).
            answer = transport.request_raw("POST", f"/runs/{run_id}/{kind}", group.body(),
                                           headers={JOINED_HEADER: str(len(group.ops))})
        else:
            answer = send_op(transport, run_id, group.ops[0].decoded())
    except Refused as exc:
        if len(group.ops) > 1:
            out = DrainResult()
            for op in group.ops:
                out.add(_send_group(transport, run_id, Group(group.kind, [op])))
            return out
        try:
            if exc.status != 413 or kind not in _BATCH_KINDS:
                raise
            answer = send_op(transport, run_id, group.ops[0].decoded())  # too big: send_op halves it
        except Refused as final:
            out.refused.append((group.ops[0], final.message))
            return out
    if kind in _BATCH_KINDS:
        setattr(out, "points" if kind == "metrics" else "rollouts", (answer or {}).get("received", 0))
    if kind == "metrics" and (answer or {}).get("refused"):
        out.refused.extend(refused_parts(group.ops, answer["refused"]))
    return out


def refused_parts(ops: list[RawOp], refused: list[dict[str, Any]]) -> list[tuple[RawOp, str]]:
    """The keys the server left out of a metrics request (it stored the others), as ops holding only
    those values: kept in rejected.jsonl like a refused batch, so `sync --refused` can send them
    again once the cause is fixed, and nothing good is sent twice."""
    by_point: dict[int, list[dict[str, Any]]] = {}
    for r in refused:
        by_point.setdefault(int(r.get("point", -1)), []).append(r)
    out: list[tuple[RawOp, str]] = []
    start = 0
    for op in ops:
        points = json.loads(op.body)
        if isinstance(points, dict):  # {"points": [...]}, as the API also takes it
            points = points.get("points") or []
        kept: list[dict[str, Any]] = []
        errors: list[str] = []
        for i, point in enumerate(points):
            for r in by_point.get(start + i, []):
                keys = [k for k in point.get("values", {}) if len(k) == r.get("length") and k.startswith(r.get("key", ""))]
                if keys:
                    kept.append({**point, "values": {k: point["values"][k] for k in keys}})
                    errors.append(f"metric key {r.get('key', '')[:60]!r} ({r.get('length')} characters) "
                                  f"at step {point.get('step')}: {r.get('error')}")
        start += len(points)
        if kept:
            body = json.dumps(kept, allow_nan=True).encode()
            message = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
            out.append((RawOp(op.seq, op.kind, body, op.end), message + " (the batch's other keys were stored)"))
    return out


class _Window:
    """Requests under way, oldest first; acknowledges the spool up to the oldest one not done."""

    def __init__(self, spool: Spool, transport: Transport, run_id: str, in_flight: int) -> None:
        self.spool, self.transport, self.run_id = spool, transport, run_id
        self.size = max(1, in_flight)
        self.pool = ThreadPoolExecutor(self.size, thread_name_prefix="deeprepo-send") if self.size > 1 else None
        self.queue: deque[tuple[Group, Future[DrainResult]]] = deque()
        self.result = DrainResult()

    def submit(self, group: Group) -> None:
        if self.pool is None or group.kind not in _BATCH_KINDS:
            self.settle_all()  # an update or finish goes after everything before it, alone
            done: Future[DrainResult] = Future()
            try:
                done.set_result(_send_group(self.transport, self.run_id, group))
            except Exception as exc:  # noqa: BLE001 - settled (and raised) in order below
                done.set_exception(exc)
            self.queue.append((group, done))
            self.settle_all()
            return
        while len(self.queue) >= self.size:
            self.settle_one()
        self.queue.append((group, self.pool.submit(_send_group, self.transport, self.run_id, group)))

    def settle_one(self) -> None:
        group, future = self.queue[0]
        try:
            got = future.result()
        except BaseException:
            self.abandon()
            raise
        self.queue.popleft()
        self._done(group, got)

    def _done(self, group: Group, got: DrainResult) -> None:
        for op, message in got.refused:  # kept on disk before the ack moves past them
            self.spool.reject(op.decoded(), message)
            got.rejected.append(f"op {op.seq} ({op.kind}): {message}")
        got.refused = []
        self.result.add(got)
        self.spool.ack(group.last.seq, group.last.end)

    def settle_all(self) -> None:
        while self.queue:
            self.settle_one()

    def abandon(self) -> None:
        """The server is away: let requests under way end, acknowledge what got through in order."""
        for _, future in self.queue:
            future.exception()  # waits
        while self.queue and self.queue[0][1].exception() is None:
            group, future = self.queue.popleft()
            self._done(group, future.result())
        self.queue.clear()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)


def drain(spool: Spool, transport: Transport, *, in_flight: int = 1, request_bytes: int = REQUEST_BYTES,
          run_id: str | None = None, progress: Callable[[DrainResult], None] | None = None) -> DrainResult:
    """Send every op after the acked one; batches in order of the log, several requests at a time,
    updates and the finish alone after everything before them. Raises ServerAway when the server is
    away (what got through is acknowledged). Reads the log from the first unacknowledged op only."""
    run_id = run_id or ensure_run(spool, transport)
    acked, cursor = spool._acked_state()
    skipped: Cursor | None = None

    def fresh() -> Iterator[RawOp]:
        nonlocal skipped, cursor
        for op in spool.read(cursor, max_bytes=None):
            cursor = op.end
            if op.seq <= acked:
                skipped = op.end  # an older client's spool: its acked seq had no offset
                continue
            yield op

    window = _Window(spool, transport, run_id, in_flight)
    try:
        # Read to the end, then, while requests are under way, wait for the oldest and read again:
        # batches logged meanwhile join the pipeline instead of waiting for it to empty.
        while True:
            for group in groups(fresh(), request_bytes):
                window.submit(group)
                if progress is not None:
                    progress(window.result)
            if not window.queue:
                break
            window.settle_one()
    finally:
        window.close()
    if skipped is not None and spool.acked() == acked:
        spool.ack(acked, skipped)
    return window.result
