"""The database as libpq tools see it: env for pg_dump / pg_restore built from Django's settings."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections


def libpq_env(alias: str = "default") -> dict[str, str]:
    cfg: dict[str, Any] = connections[alias].settings_dict
    env = {**os.environ, "PGDATABASE": str(cfg["NAME"])}
    for key, var in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER"), ("PASSWORD", "PGPASSWORD")):
        if cfg.get(key):
            env[var] = str(cfg[key])
    return env


def run_tool(args: list[str], alias: str = "default") -> None:
    """Run a libpq tool; its stderr becomes the error (arguments are a list: nothing passes a shell)."""
    done = subprocess.run(args, env=libpq_env(alias), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


@contextmanager
def streaming_cursor(alias: str = "default") -> Iterator[Any]:
    """A server-side cursor that lives inside the caller's transaction (call it within atomic()): rows
    come a batch at a time, never all at once.

    Made here, not with chunked_cursor(), because DISABLE_SERVER_SIDE_CURSORS (set behind PgBouncer in
    transaction mode) turns that into a client-side cursor holding every row. Inside one transaction
    PgBouncer keeps the same server connection, so this cursor is safe there."""
    conn = connections[alias]
    if not conn.in_atomic_block:
        raise RuntimeError("streaming_cursor needs a transaction (wrap it in transaction.atomic())")
    conn.ensure_connection()
    assert conn.connection is not None
    with conn.connection.cursor(name=f"stream_{uuid.uuid4().hex}") as cur:
        yield cur
