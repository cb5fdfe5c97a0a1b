"""The database router installed with a replica: reads go to it only inside a page request that
middleware.py marked, that has not written yet, and while the replica is alive and close behind.
`read_alias` is that decision, and `read_cursor` a cursor there, for code that reads through raw SQL
(the selectors' aggregates, search): a page reads all its data from one database."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.db import connections
from django.db.backends.utils import CursorWrapper

from deeprepo_web.replica.health import REPLICA, replica_state

# True inside a GET/HEAD page request whose user has not written in the last few seconds.
may_read_replica: ContextVar[bool] = ContextVar("may_read_replica", default=False)


def read_alias() -> str:
    """The database a read made now goes to: the replica or "default" (always "default" without one)."""
    # Inside a transaction on the primary, reads belong to it (they may be followed by its writes).
    if may_read_replica.get() and not connections["default"].in_atomic_block and replica_state().serves_reads:
        return REPLICA
    return "default"


def read_cursor() -> CursorWrapper:
    """A cursor for a read in raw SQL, on the database the ORM's reads go to now (see read_alias).
    Only for reads: a write through it could land on the replica, which refuses it."""
    return connections[read_alias()].cursor()


class ReplicaRouter:
    def db_for_read(self, model: type, **hints: Any) -> str:
        # Always a name: returning None would let Django follow an instance that came from the replica.
        return read_alias()

    def db_for_write(self, model: type, **hints: Any) -> str:
        may_read_replica.set(False)  # the rest of this request reads what it just wrote
        return "default"

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return {obj1._state.db, obj2._state.db} <= {"default", REPLICA, None}

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == "default"
