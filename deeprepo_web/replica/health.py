"""Is the replica usable now: reachable, and how far behind the primary (probed at most every few s).

Lag is 0 when the replica has replayed everything the primary had written at the probe; otherwise it
is the time since the last transaction it replayed. That overstates the lag after an idle spell (the
safe direction: reads go back to the primary sooner, never later).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connections

REPLICA = "replica"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReplicaState:
    configured: bool
    alive: bool = False
    lag_seconds: float | None = None
    lag_bytes: int | None = None
    error: str = ""
    checked_at: float = 0.0

    @property
    def serves_reads(self) -> bool:
        return (self.alive and self.lag_seconds is not None
                and self.lag_seconds <= settings.DEEPREPO_REPLICA_MAX_LAG_SECONDS)

    @property
    def summary(self) -> str:
        if not self.configured:
            return "no read replica configured: every read goes to the primary"
        if not self.alive:
            return "replica unreachable: reads go to the primary"
        where = "page reads go to the replica" if self.serves_reads else (
            f"more than {settings.DEEPREPO_REPLICA_MAX_LAG_SECONDS} s behind: reads go to the primary")
        return f"replica lag {self.lag_seconds:.1f} s ({self.lag_bytes} bytes of WAL): {where}"


_lock = threading.Lock()
_state = ReplicaState(configured=False)


def _probe() -> ReplicaState:
    try:
        with connections["default"].cursor() as cur:
            cur.execute("SELECT pg_current_wal_lsn()::text")
            primary_lsn = cur.fetchone()[0]
        with connections[REPLICA].cursor() as cur:
            cur.execute(
                "SELECT pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn())::bigint, "
                "extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8, pg_is_in_recovery()",
                [primary_lsn])
            behind, since_replay, in_recovery = cur.fetchone()
    except DatabaseError as exc:
        connections[REPLICA].close()  # a dead server leaves a broken connection behind
        log.warning("read replica unusable, reads go to the primary: %s", exc)
        return ReplicaState(configured=True, error=str(exc).strip().splitlines()[0][:200] if str(exc) else "error",
                            checked_at=time.monotonic())
    if not in_recovery:  # promoted or misconfigured: not a copy of this primary any more
        return ReplicaState(configured=True, error="the replica is not in recovery", checked_at=time.monotonic())
    behind = max(0, int(behind or 0))
    lag = 0.0 if behind == 0 else max(0.0, float(since_replay or 0.0))
    return ReplicaState(configured=True, alive=True, lag_seconds=lag, lag_bytes=behind, checked_at=time.monotonic())


def replica_state(*, fresh: bool = False) -> ReplicaState:
    """The replica's last probe, repeated when older than DEEPREPO_REPLICA_CHECK_SECONDS."""
    global _state
    if REPLICA not in settings.DATABASES:
        return ReplicaState(configured=False)
    now = time.monotonic()
    if not fresh and _state.configured and now - _state.checked_at < settings.DEEPREPO_REPLICA_CHECK_SECONDS:
        return _state
    with _lock:
        if fresh or not _state.configured or now - _state.checked_at >= settings.DEEPREPO_REPLICA_CHECK_SECONDS:
            _state = _probe()
        return _state
