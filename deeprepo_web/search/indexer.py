"""search_index_update: make one search document per new rollout (its turns', tool calls' and
answer's texts joined, texts.py) and per new example prompt (the words index is an expression index
over the body: no tsvector is stored). Beat runs it every few seconds; ingest itself never waits for a
search index.

The unit is a rollout: `rollouts_ingest` commits a rollout with all its turns and tool calls, so one
visible is whole. The one path that changes them later, `runs.ingest.replace` (OTLP spans arriving
late), rebuilds that rollout's document in its own transaction (`search_docs_rebuild`).

Each source is read by id from its watermark on, in windows. Ids are allocated before an ingest
transaction commits, so a window re-reads the last SLACK ids behind the watermark (rollouts already
there are skipped before they are indexed): a transaction that committed late is caught.

Nearly all of a window's time is the two GIN indexes' upkeep in the Postgres backend (to_tsvector and
the trigrams of every body, then their entries, docs/scale.md), one core's work per statement. With a
backlog of several windows, DEEPREPO_SEARCH_INDEX_WORKERS of them run side by side, each on its own
connection and committed on its own (searchable as soon as it is done); the watermark moves past them
only once all of them are in, so a failed one is read again next pass.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection, transaction

from deeprepo_web.replica.router import read_cursor
from deeprepo_web.search.texts import BODIES, INDEXED, PART_CHARS

# Rollouts hold ~13 texts each (8 turns, 4 calls, the answer): a window of rollouts is as much text as
# the 20,000 turns and calls the indexer read per window before.
WINDOW = {"rollout": 1_500, "prompt": 20_000}
SLACK = {"rollout": 5_000, "prompt": 20_000}
# A backlog is split over the workers from this many ids per worker on: a steady rate the workers
# together keep up with never piles up into whole windows first.
MIN_SPLIT = {"rollout": 100, "prompt": 1_000}


def _pieces() -> str:
    """(rollout id, run id, text, order keys) of every piece of the rollouts in `todo` (id, run_id):
    turns by index, each turn's calls after it, the answer and error last. Turns and calls come from
    one parse of each rollout's document (runs/turndoc.py's keys, read as the views runs_turn and
    runs_toolcall read them): through the two views it was parsed twice, 45 % of a window's reads."""
    turn, call, rollout = (BODIES[s].format(a=a) for s, a in (("turn", "t"), ("call", "c"), ("rollout", "r")))
    turn_row = ("(SELECT coalesce(e->>'c', '') AS content, coalesce(e->>'rs', '') AS reasoning, "
                "(e->>'i')::int AS index, (e->>'id')::bigint AS id) t")
    call_rows = ("(SELECT x->>'n' AS name, x->'a' AS arguments, coalesce(x->>'o', '') AS output, "
                 "(x->>'id')::bigint AS id FROM jsonb_array_elements(e->'k') x) c")
    return ("SELECT o.id, o.run_id, p.body, p.k1, p.k2, p.k3 FROM todo o "
            "JOIN runs_rolloutturns d ON d.rollout_id = o.id CROSS JOIN LATERAL jsonb_array_elements(d.doc::jsonb) e "
            f"CROSS JOIN LATERAL (SELECT {turn}, t.index, 0, t.id FROM {turn_row} "
            f"UNION ALL SELECT {call}, (e->>'i')::int, 1, c.id FROM {call_rows}) p(body, k1, k2, k3) "
            f"UNION ALL SELECT o.id, o.run_id, {rollout}, NULL, 2, r.id FROM todo o JOIN runs_rollout r ON r.id = o.id")


def _rollout_docs(todo: str, on_conflict: str) -> str:
    """The statement that writes the documents of the rollouts `todo` selects (id, run_id): a rollout's
    pieces in order joined by newlines, a new part where one begins past a multiple of PART_CHARS.
    The todo CTE is read once for every kind of piece. Migration search 0004 keeps a frozen copy."""
    order = "p.k1, p.k2, p.k3"
    return (f"WITH todo AS MATERIALIZED ({todo}) {_INSERT}"
            f"SELECT 'rollout', q.rid, q.part, q.rid, q.run_id, string_agg(q.body, E'\\n' ORDER BY q.k1, q.k2, q.k3) "
            "FROM (SELECT p.rid, p.run_id, p.body, p.k1, p.k2, p.k3, (coalesce(sum(length(p.body)) OVER ("
            f"PARTITION BY p.rid ORDER BY {order} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) "
            f"/ {PART_CHARS})::smallint AS part FROM ({_pieces()}) p(rid, run_id, body, k1, k2, k3)) q "
            f"GROUP BY q.rid, q.run_id, q.part ON CONFLICT (src, obj, part) {on_conflict}")


_INSERT = "INSERT INTO search_doc (src, obj, part, rollout_id, run_id, body) "


def _window(cur: object, src: str, start: int, end: int) -> int:
    if src == "prompt":
        body = BODIES[src].format(a="e")
        sql = (f"{_INSERT}SELECT 'prompt', e.id, 0, NULL, NULL, {body} FROM runs_example e "
               "WHERE e.id > %s AND e.id <= %s AND NOT EXISTS (SELECT 1 FROM search_doc d "
               "WHERE d.src = 'prompt' AND d.obj = e.id) ON CONFLICT (src, obj, part) DO NOTHING")
        cur.execute(sql, [start, end])  # type: ignore[attr-defined]
        return int(cur.rowcount)  # type: ignore[attr-defined]
    # The rollouts of the window not indexed yet.
    sql = _rollout_docs("SELECT r.id, r.run_id FROM runs_rollout r WHERE r.id > %s AND r.id <= %s AND NOT EXISTS "
                        "(SELECT 1 FROM search_doc d WHERE d.src = 'rollout' AND d.obj = r.id)", "DO NOTHING")
    cur.execute(sql, [start, end])  # type: ignore[attr-defined]
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
    a flood of rollouts never starves prompts); returns the documents added."""
    # Worker threads see only committed rows: inside a caller's transaction, windows run one by one.
    workers = 1 if connection.in_atomic_block else max(1, settings.DEEPREPO_SEARCH_INDEX_WORKERS)
    if workers == 1:
        return _update(budget_seconds, 1, None)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return _update(budget_seconds, workers, pool)


def _update(budget_seconds: float, workers: int, pool: ThreadPoolExecutor | None) -> int:
    added = 0
    share = budget_seconds / len(INDEXED)
    for src, table in INDEXED.items():
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
            start = max(0, last - SLACK[src])
            if start < last and time.monotonic() < deadline:
                added += _window(cur, src, start, last)
                start = last
            while start < top and time.monotonic() < deadline:
                stop = min(top, start + WINDOW[src] * workers)
                if pool is None or stop - start < MIN_SPLIT[src] * workers:  # a small backlog: at once, here
                    stop = min(stop, start + WINDOW[src])
                    added += _window(cur, src, start, stop)
                else:  # split evenly, so every worker's window takes about as long
                    cuts = [start + (stop - start) * i // workers for i in range(workers + 1)]
                    added += sum(pool.map(_window_alone, [src] * workers, cuts[:-1], cuts[1:]))
                start = stop
            # Never backwards: a pass out of time before it passed the old mark keeps the old mark.
            cur.execute("INSERT INTO search_watermark (src, last_id) VALUES (%s, %s) "
                        "ON CONFLICT (src) DO UPDATE SET last_id = EXCLUDED.last_id", [src, max(last, start)])
    return added


LAG_COUNTED = 10_000  # past this many, the search page says "more than": counting further costs the page


def search_index_lag() -> dict[str, int]:
    """Per source (rollout, prompt): rows logged but not yet searchable, counted up to LAG_COUNTED past
    the source's watermark (its id index), as seen where the search page reads (the replica's copy lags
    with its watermarks). A few of them may be indexed already: the indexer re-reads SLACK ids behind."""
    with read_cursor() as cur:
        parts = ", ".join(
            f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE id > coalesce((SELECT last_id FROM "
            f"search_watermark WHERE src = '{src}'), 0) LIMIT {LAG_COUNTED + 1}) x)"
            for src, table in INDEXED.items())
        cur.execute(f"SELECT {parts}")
        return dict(zip(INDEXED, map(int, cur.fetchone()), strict=True))


def search_docs_rebuild(rollout_ids: list[int]) -> None:
    """Rollouts rebuilt in place (`runs.ingest.replace`, in its transaction): their documents are made
    again from the rows as they are now, so text that arrived late is searchable with the rest."""
    if not rollout_ids:
        return
    with connection.cursor() as cur:
        cur.execute("DELETE FROM search_doc WHERE src = 'rollout' AND obj = ANY(%s)", [rollout_ids])
        # A pass of the indexer may have folded the old rows meanwhile (its insert waits for ours):
        # the newer text wins.
        cur.execute(_rollout_docs("SELECT r.id, r.run_id FROM runs_rollout r WHERE r.id = ANY(%s)",
                                  "DO UPDATE SET body = EXCLUDED.body, run_id = EXCLUDED.run_id"), [rollout_ids])
