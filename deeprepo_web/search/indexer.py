"""search_index_update: copy new turns, tool calls, rollouts and prompts into search_doc (the words
index is an expression index over the body: no tsvector is stored). Beat runs it every few seconds;
ingest itself never waits for a search index.

Each source is read by id from its watermark on, in windows. Ids are allocated before an ingest
transaction commits, so a window re-reads the last SLACK ids behind the watermark (rows already
there are skipped before they are indexed): a transaction that committed late is caught.

Nearly all of a window's time is the two GIN indexes' upkeep in the Postgres backend (to_tsvector and
the trigrams of every body, then their entries: ~0.45 ms per 1 KB turn, docs/scale.md), one core's
work per statement. With a backlog of several windows, DEEPREPO_SEARCH_INDEX_WORKERS of them run side
by side, each on its own connection and committed on its own (searchable as soon as it is done); the
watermark moves past them only once all of them are in, so a failed one is read again next pass.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection, transaction

from deeprepo_web.replica.router import read_cursor
from deeprepo_web.search.texts import BODIES, TABLES

WINDOW = 20_000
SLACK = 20_000
# A backlog is split over the workers from this many ids per worker on (~0.4 s of 1 KB turns each on
# the 2-core development machine, against a new connection's few ms): a steady rate the workers
# together keep up with never piles up into whole windows first.
MIN_SPLIT = 1_000

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


def _window_alone(src: str, start: int, end: int) -> int:
    """One window on this thread's own connection, in its own transaction (a worker thread's)."""
    try:
        with transaction.atomic(), connection.cursor() as cur:
            return _window(cur, src, start, end)
    finally:
        connection.close()


def search_index_update(*, budget_seconds: float = 20.0) -> int:
    """Index what arrived since the last pass, each source within its share of `budget_seconds` (so
    a flood of turns never starves tool calls); returns the rows added."""
    # Worker threads see only committed rows: inside a caller's transaction, windows run one by one.
    workers = 1 if connection.in_atomic_block else max(1, settings.DEEPREPO_SEARCH_INDEX_WORKERS)
    if workers == 1:
        return _update(budget_seconds, 1, None)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return _update(budget_seconds, workers, pool)


def _update(budget_seconds: float, workers: int, pool: ThreadPoolExecutor | None) -> int:
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
            # The re-read behind the mark first, alone: rows there are nearly all indexed (cheap).
            start = max(0, last - SLACK)
            if start < last and time.monotonic() < deadline:
                added += _window(cur, src, start, last)
                start = last
            while start < top and time.monotonic() < deadline:
                stop = min(top, start + WINDOW * workers)
                if pool is None or stop - start < MIN_SPLIT * workers:  # a small backlog: at once, here
                    stop = min(stop, start + WINDOW)
                    added += _window(cur, src, start, stop)
                else:  # split evenly, so every worker's window takes about as long
                    cuts = [start + (stop - start) * i // workers for i in range(workers + 1)]
                    added += sum(pool.map(_window_alone, [src] * workers, cuts[:-1], cuts[1:]))
                start = stop
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
