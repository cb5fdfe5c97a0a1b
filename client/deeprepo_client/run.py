"""A run being logged: `init()` makes one; `log`, `log_rollouts`, `finish` feed it.

Every batch goes to the run's spool on disk first; a background thread sends the spool in order.
When the server is away the spool simply grows and is sent when it is back (or later with
`deeprepo sync DIR`): nothing is lost, and since every op is idempotent, nothing is doubled.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from deeprepo_client.encode import encode, metric_values
from deeprepo_client.finish import FinishSummary, Progress
from deeprepo_client.spool import Spool, SpoolError, default_root
from deeprepo_client.transport import (
    IN_FLIGHT,
    REQUEST_BYTES,
    DrainResult,
    Refused,
    ServerAway,
    Transport,
    backoff,
    drain,
    ensure_run,
    send_op,
)

# Defaults of init(): a metrics batch closes at this many points or this many seconds, whichever
# comes first; rollouts are spooled per log_rollouts call in chunks of at most ROLLOUT_BATCH. The
# sender joins spooled batches into requests of ~REQUEST_BYTES with IN_FLIGHT of them under way.
METRIC_BATCH = 50_000
BATCH_SECONDS = 1.0
ROLLOUT_BATCH = 256

def _warn(message: str) -> None:
    print(f"deeprepo: {message}", file=sys.stderr, flush=True)


class Run:
    def __init__(
        self,
        *,
        spool: Spool,
        transport: Transport | None,
        flush_interval: float = 1.0,
        batch_points: int = METRIC_BATCH,
        batch_seconds: float = BATCH_SECONDS,
        batch_rollouts: int = ROLLOUT_BATCH,
        request_bytes: int = REQUEST_BYTES,
        in_flight: int = IN_FLIGHT,
    ) -> None:
        self.spool = spool
        self.transport = transport
        self.flush_interval = flush_interval
        self.batch_points = max(1, batch_points)
        self.batch_seconds = batch_seconds
        self.batch_rollouts = max(1, batch_rollouts)
        self.request_bytes = request_bytes
        self.in_flight = in_flight
        self._points: list[dict[str, Any]] = []
        self._point_count = 0
        self._points_special = False  # the open batch holds NaN/Infinity (or ints past 64 bits)
        self._batch_opened = 0.0
        self._step = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._finished = False
        self._summary: FinishSummary | None = None
        self.sent = DrainResult()  # what the server took so far (and what it refused)
        self.last_error: str | None = None
        self._server_id: str | None = None
        self._thread: threading.Thread | None = None
        if transport is not None:
            self._thread = threading.Thread(target=self._sender, name="deeprepo-sender", daemon=True)
            self._thread.start()
        atexit.register(self._atexit)

    # ------------------------------------------------------------ identity

    @property
    def id(self) -> str | None:
        """The server's public id (None while offline and never synced)."""
        if self._server_id is None and self.spool.path.exists():
            self._server_id = self.spool.read_meta().get("server_id")
        return self._server_id

    @property
    def local_id(self) -> str:
        return self.spool.path.name

    @property
    def url(self) -> str | None:
        if self.transport is None or self.id is None:
            return None
        return f"{self.transport.url}/r/{self.id}/"

    # ------------------------------------------------------------ logging

    def log(self, values: dict[str, Any], step: int | None = None, time_: float | None = None) -> None:
        """Log scalar values at a step (the next step after the last one when omitted)."""
        if step is None:
            step = self._step
        numbers, special = metric_values(values)
        with self._lock:
            self._step = max(self._step, step + 1)
            if not self._points:
                self._batch_opened = time.monotonic()
            self._points.append({"step": int(step), "time": time_ or time.time(), "values": numbers})
            self._point_count += len(numbers)
            self._points_special |= special
            full = self._point_count >= self.batch_points
        if full:
            self._flush_points()

    def log_rollouts(self, rollouts: list[dict[str, Any]]) -> None:
        """Log rollouts (deeprepo_client.records.RolloutRecord). Each gets a uid so re-sends are no-ops."""
        batch = []
        for r in rollouts:
            r = dict(r)
            r.setdefault("uid", uuid.uuid4().hex)
            for key in ("reward", "advantage", "cost", "duration"):
                v = r.get(key)
                if isinstance(v, float) and not math.isfinite(v):
                    _warn(f"log_rollouts: {key}={v} is not finite; stored as unknown")
                    r[key] = None
            batch.append(r)
        for i in range(0, len(batch), self.batch_rollouts):
            self._append("rollouts", batch[i : i + self.batch_rollouts])

    def log_artifact(
        self, path: str | os.PathLike[str], kind: str = "checkpoint", name: str | None = None, *, workers: int = 4
    ) -> dict[str, Any]:
        """Upload a file (a checkpoint, an adapter, eval outputs) to the run; blocks until it is stored.

        The bytes go straight to the object store through presigned URLs (in parts, several at
        a time, for big files); the server then checks size and sha256. Interrupted, the same
        call resumes where it stopped. Returns the artifact record.
        """
        from deeprepo_client.artifacts import upload_artifact

        if self.transport is None:
            raise RuntimeError("log_artifact needs an online run (DEEPREPO_MODE=online and an API key)")
        run_id = ensure_run(self.spool, self.transport)
        return upload_artifact(
            self.transport, run_id, path, kind=kind, name=name, workers=workers,
            resume_dir=self.spool.path.parent / "_artifact_uploads",
        )

    def update(self, **fields: Any) -> None:
        """Change run fields (tags, notes, config, summary, status ...)."""
        self._append("update", fields)

    def finish(self, status: str = "finished", timeout: float | None = None) -> FinishSummary:
        """Flush everything, mark the run finished and wait until the server has it all.

        Waits as long as batches keep being acknowledged (a progress line on stderr after a few
        seconds); gives up when the server has taken nothing for DEEPREPO_FINISH_TIMEOUT seconds
        (default 120), or after `timeout` seconds in all. Returns a summary (true when everything
        was stored) and warns, with the `deeprepo sync` command, when anything was refused or left.
        """
        if self._summary is not None:
            return self._summary
        if not self._finished:
            self._flush_points()
            self._append("finish", {"status": status})
            self._finished = True
        if self.transport is None:
            self._summary = self._summarize()
            _warn(f"offline run spooled in {self.spool.path}; upload it with `deeprepo sync {self.spool.path}`")
            return self._summary
        self._wait_sent(timeout)
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._thread is None or not self._thread.is_alive():
            # A finished run sends nothing more: an open keep-alive connection would only hold a
            # server thread (and delay the server's graceful stop) until it times out.
            self.transport.close()
        self.id  # noqa: B018 - remember the server id before the spool goes
        summary = self._summarize()
        if summary.ok:
            shutil.rmtree(self.spool.path, ignore_errors=True)  # everything is on the server
        else:
            _warn(summary.warning(self.last_error))
        self._summary = summary
        return summary

    def _wait_sent(self, timeout: float | None) -> None:
        stall = float(os.environ.get("DEEPREPO_FINISH_TIMEOUT", "120"))
        start = time.monotonic()
        progress = Progress(self.spool)
        last_acked, last_change = self.spool.acked(), start
        while self.spool.pending() > 0:
            now = time.monotonic()
            acked = self.spool.acked()
            if acked != last_acked:
                last_acked, last_change = acked, now
            if (timeout is not None and now - start >= timeout) or now - last_change >= stall:
                break
            progress.show(now - start)
            self._wake.set()
            time.sleep(0.05 if now - start < 1 else 0.2)
        progress.close()

    def _summarize(self) -> FinishSummary:
        rejected = self.spool.rejected() if self.spool.path.exists() else []
        return FinishSummary(
            sent_batches=self.sent.sent - len(self.sent.rejected), points=self.sent.points,
            rollouts=self.sent.rollouts, refused=[f"{r['op'].get('kind')} batch: {r['error']}" for r in rejected],
            spooled=max(0, self.spool.pending()) if self.spool.path.exists() else 0, spool=str(self.spool.path),
        )

    # ------------------------------------------------------------ internals

    def _append(self, kind: str, body: Any, exact_floats: bool = False) -> None:
        try:
            self.spool.append_raw(kind, encode(body, exact_floats))
        except SpoolError as exc:
            # The spool is intact but this batch is not on disk: hand it to the server directly,
            # and say so loudly when that is impossible too (nothing is silently dropped).
            if self.transport is not None:
                try:
                    send_op(self.transport, ensure_run(self.spool, self.transport), {"kind": kind, "body": body})
                    _warn(f"{exc}; this batch was sent directly instead")
                    return
                except (ServerAway, Refused) as send_exc:
                    raise SpoolError(f"{exc}; and the server is away ({send_exc}): this {kind} batch "
                                     "was not kept. Free disk space or set DEEPREPO_SPOOL_DIR") from send_exc
            raise SpoolError(f"{exc}: this {kind} batch was not kept. Free disk space or set "
                             "DEEPREPO_SPOOL_DIR") from exc
        self._wake.set()

    def _flush_points(self, older_than: float | None = None) -> None:
        with self._lock:
            if older_than is not None and (not self._points or time.monotonic() - self._batch_opened < older_than):
                return
            points, self._points, self._point_count = self._points, [], 0
            special, self._points_special = self._points_special, False
        if points:
            self._append("metrics", points, exact_floats=special)

    def _sender(self) -> None:
        assert self.transport is not None
        attempt = 0
        run_id: str | None = None
        while True:
            self._wake.wait(min(self.flush_interval, self.batch_seconds))
            self._wake.clear()
            self._flush_points(older_than=self.batch_seconds)
            try:
                run_id = run_id or ensure_run(self.spool, self.transport)
                result = drain(self.spool, self.transport, in_flight=self.in_flight,
                               request_bytes=self.request_bytes, run_id=run_id)
                self.sent.add(result)
                for line in result.rejected:
                    _warn(f"the server refused a batch: {line}")
                attempt = 0
                self.last_error = None
            except (ServerAway, Refused) as exc:
                self.last_error = str(exc)
                if attempt == 0:
                    _warn(f"server away ({exc}); spooling to {self.spool.path} and retrying")
                if self._stop.wait(backoff(attempt, exc=exc)):
                    return
                attempt = min(attempt + 1, 6)
                self._wake.set()
                continue
            if self._stop.is_set():
                return

    def _atexit(self) -> None:
        if not self._finished:
            try:
                self.finish(status="crashed" if sys.exc_info()[0] else "finished")
            except Exception as exc:  # noqa: BLE001 - never raise from interpreter exit
                _warn(f"could not finish the run at exit: {exc}")


def init(
    project: str | None = None,
    name: str | None = None,
    config: dict[str, Any] | None = None,
    *,
    kind: str = "train",
    model: str = "",
    environment: str = "",
    method: str = "",
    tags: list[str] | None = None,
    notes: str = "",
    parent_run_id: str | None = None,
    checkpoint_step: int | None = None,
    run_id: str | None = None,
    url: str | None = None,
    api_key: str | None = None,
    mode: str | None = None,
    spool_dir: str | Path | None = None,
    flush_interval: float = 1.0,
    batch_points: int = METRIC_BATCH,
    batch_seconds: float = BATCH_SECONDS,
    batch_rollouts: int = ROLLOUT_BATCH,
    request_bytes: int = REQUEST_BYTES,
    in_flight: int = IN_FLIGHT,
) -> Run:
    """Start (or, with run_id / DEEPREPO_RUN_ID, resume) a run.

    Reads DEEPREPO_URL, DEEPREPO_API_KEY, DEEPREPO_RUN_ID, DEEPREPO_PROJECT, DEEPREPO_MODE
    (`online` or `offline`) and DEEPREPO_SPOOL_DIR.

    Batching: metric points are spooled in batches closed at `batch_points` points or
    `batch_seconds` seconds, whichever comes first; rollouts in chunks of `batch_rollouts`. The
    sender joins spooled batches into requests of about `request_bytes` and keeps `in_flight`
    requests under way (updates and the finish go alone, after everything logged before them).
    """
    mode = (mode or os.environ.get("DEEPREPO_MODE") or "online").lower()
    if mode not in ("online", "offline"):
        raise ValueError(f"DEEPREPO_MODE must be online or offline, not {mode!r}")
    url = url or os.environ.get("DEEPREPO_URL") or "http://127.0.0.1:8000"
    api_key = api_key or os.environ.get("DEEPREPO_API_KEY")
    run_id = run_id or os.environ.get("DEEPREPO_RUN_ID") or None
    project = project or os.environ.get("DEEPREPO_PROJECT") or None
    if mode == "online" and not api_key:
        raise ValueError("no API key: pass api_key= or set DEEPREPO_API_KEY (or DEEPREPO_MODE=offline)")
    local_id = uuid.uuid4().hex
    create: dict[str, Any] = {
        "name": name or f"run-{time.strftime('%Y%m%d-%H%M%S')}",
        "kind": kind,
        "config": config or {},
        "model": model,
        "environment": environment,
        "method": method,
        "tags": tags or [],
        "notes": notes,
        "external_id": local_id,
        "parent_run_id": parent_run_id,
        "checkpoint_step": checkpoint_step,
    }
    if project:
        create["project"] = project
    root = Path(spool_dir) if spool_dir else default_root()
    spool = Spool.create(root, local_id, create, server_id=run_id)
    transport = Transport(url, api_key) if mode == "online" and api_key else None
    if transport is not None:
        if run_id:
            # A launched job's run exists already: fill in what the program knows about itself.
            known = {"model": model, "environment": environment, "method": method}
            spool.append("update", {"status": "running", **{k: v for k, v in known.items() if v}})
        else:
            # Create now so run.id is known at once; if the server is away the sender creates it later.
            for attempt in range(3):
                try:
                    ensure_run(spool, transport)
                    break
                except ServerAway as exc:
                    if attempt == 2:
                        _warn(f"server away ({exc}); the run will be created when it is back")
                    else:
                        time.sleep(backoff(attempt, exc=exc))
    return Run(spool=spool, transport=transport, flush_interval=flush_interval, batch_points=batch_points,
               batch_seconds=batch_seconds, batch_rollouts=batch_rollouts, request_bytes=request_bytes,
               in_flight=in_flight)
