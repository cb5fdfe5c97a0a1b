"""Postgres's plan of a statement, for tests that check an index serves it."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction


def plan(sql: str, params: Any = (), *, off: tuple[str, ...] = ("seqscan",)) -> str:
    """EXPLAIN of `sql` with these planner methods off (`enable_<name>`): a test's tables are small enough
    that Postgres would scan them whatever indexes exist. The settings are put back after."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("; ".join(f"SET LOCAL enable_{name} = off" for name in off))
        cur.execute(f"EXPLAIN {sql}", params)
        out = "\n".join(row[0] for row in cur.fetchall())
        cur.execute("; ".join(f"SET LOCAL enable_{name} TO DEFAULT" for name in off))
    return out
