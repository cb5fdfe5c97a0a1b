"""search_index_update: copy new turns, tool calls, rollouts and prompts into search_doc (the words
index is an expression index over the body: no tsvector is stored). Beat runs it every few seconds;
ingest itself never waits for a search index.

Each source is read by id from its watermark on, in windows. Ids are allocated before an ingest
transaction commits, so a window re-reads the last SLACK ids behind the watermark (rows already
there are skipped before they are indexed): a transaction that committed late is caught.
"""

from __future__ import annotations

import time

from django.db import connection, transaction

from deeprepo_web.replica.router import read_cursor
from deeprepo_web.search.texts import BODIES, TABLES

WINDOW = 20_000
SLACK = 20_000

_SELECTS = {
    "turn": ("SELECT t.id, t.rollout_id, r.run_id, t.index, {body} FROM runs_turn t "
             "JOIN runs_rollout r ON r.id = t.rollout_id", "t"),
    "call": ("SELECT c.id, c.rollout_id, r.run_id, (SELECT ti.index FROM runs_turn ti WHERE ti.id = c.turn_id), "
             "{body} FROM runs_toolcall c JOIN runs_rollout r ON r.id = c.rollout_id", "c"),
    "rollout": ("SELECT r.id, r.id, r.run_id, NULL::int, {body} FROM runs_rollout r", "r"),
    "prompt": ("SELECT e.id, NULL::bigint, NULL::bigint, NULL::int, {body} FROM runs_example e", "e"),
}


def _window(cur: object, src: str, start: int, end: int) -> int:
    select, alias = _SELECTS[src]
    body = BODIES[src].format(a=alias)
    sql = ("INSERT INTO search_doc (src, obj, rollout_id, run_id, turn_index, body) "
           "SELECT %s, x.id, x.rollout_id, x.run_id, x.turn_index, x.body "
           f"FROM ({select.format(body=body + ' AS body')} WHERE {alias}.id > %s AND {alias}.id <= %s "
           f"AND NOT EXISTS (SELECT 1 FROM search_doc d WHERE d.src = %s AND d.obj = {alias}.id)) "
           "x(id, rollout_id, run_id, turn_index, body) ON CONFLICT (src, obj) DO NOTHING")
    cur.execute(sql, [src, start, end, src])  # type: ignore[attr-defined]
    return int(cur.rowcount)  # type: ignore[attr-defined]


def search_index_update(*, budget_seconds: float = 20.0) -> int:
    """Index what arrived since the last pass, each source within its share of `budget_seconds` (so
    a flood of turns never starves tool calls); returns the rows added."""
    added = 0
    share = budget_seconds / len(TABLES)
    for src, table in TABLES.items():
        deadline = time.monotonic() + share
        with transaction.atomic(), connection.cursor() as cur:
            # One pass per source at a time: a second worker waits here rather than doing it twice.
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('deeprepo.search.index.' || %s))", [src])
            cur.execute("SELECT last_id FROM search_watermark WHERE src = %s", [src])
            row = cur.fetchone()
            cur.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
            top = cur.fetchone()[0]
            last = min(row[0] if row else 0, top)
            start = max(0, last - SLACK)
            while start < top and time.monotonic() < deadline:
                end = min(top, start + WINDOW)
                added += _window(cur, src, start, end)
                start = end
            # Never backwards: a pass out of time before it passed the old mark keeps the old mark.
            cur.execute("INSERT INTO search_watermark (src, last_id) VALUES (%s, %s) "
                        "ON CONFLICT (src) DO UPDATE SET last_id = EXCLUDED.last_id", [src, max(last, start)])
    return added


def search_index_lag() -> int:
    """Rows logged but not yet searchable (approximate: ids past each source's watermark), as seen
    where the search page reads (the replica's copy lags with its watermarks)."""
    with read_cursor() as cur:
        parts = " + ".join(
            f"greatest(0, (SELECT coalesce(max(id), 0) FROM {table}) - "
            f"coalesce((SELECT last_id FROM search_watermark WHERE src = '{src}'), 0))"
            for src, table in TABLES.items())
        cur.execute(f"SELECT {parts}")
        return int(cur.fetchone()[0])


def docs_of_rebuilt_rollouts(rollout_ids: list[int]) -> None:
    """Rollouts rebuilt in place (`runs.ingest.replace`): their turns' and calls' documents go (the
    new rows have new ids, which the next pass indexes); the rollout's own document is rewritten."""
    body = BODIES["rollout"].format(a="r")
    with connection.cursor() as cur:
        cur.execute("DELETE FROM search_doc WHERE rollout_id = ANY(%s) AND src IN ('turn', 'call')", [rollout_ids])
        cur.execute(f"UPDATE search_doc d SET body = {body} FROM runs_rollout r "
                    "WHERE d.src = 'rollout' AND d.obj = r.id AND r.id = ANY(%s)", [rollout_ids])
