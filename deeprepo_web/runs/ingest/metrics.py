"""Metric points: COPY into the points table; rollups and series stats folded from the batch itself.

The batch is flattened and folded in memory first (fold.py), outside any lock. Then, in one
transaction: the points go in by binary COPY, and each touched rollup bucket and series gets one
merge row. A re-sent batch makes the COPY hit the primary key; it is then stored through a staging
table with ON CONFLICT DO NOTHING and only the points that were new are folded, so counts never
double and min/max/last (idempotent) stay exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from django.db import connection, transaction

from deeprepo_web.runs.ingest.fold import (
    ROLLUP_WIDTHS,
    SHIFTS,
    Points,
    points_from_batch,
    rollups,
    series_stats,
)
from deeprepo_web.runs.ingest.pg import COPY_BINARY_HEADER, COPY_BINARY_TRAILER, copy_binary_rows
from deeprepo_web.runs.models import Run

__all__ = ["ROLLUP_WIDTHS", "metrics_ingest", "series_cache_clear"]

_LOCK_METRICS = 1  # pg advisory lock namespace: (this, run id)

_known_series: dict[tuple[int, str], int] = {}  # (run id, key) -> series id; ids never change


def series_cache_clear() -> None:
    """Forget the known series: a batch that failed rolled back the series rows it had made."""
    _known_series.clear()


def _series_ids(cur: Any, run: Run, keys: list[str]) -> np.ndarray:
    """Series id of each key (index-aligned with keys), creating the missing series."""
    missing = sorted(k for k in keys if (run.pk, k) not in _known_series)
    if missing:
        cur.execute(
            "INSERT INTO runs_metricseries (run_id, key, count) SELECT %s, k, 0 FROM unnest(%s::text[]) AS k "
            "ON CONFLICT (run_id, key) DO NOTHING",
            [run.pk, missing],
        )
        cur.execute("SELECT key, id FROM runs_metricseries WHERE run_id = %s AND key = ANY(%s)", [run.pk, missing])
        if len(_known_series) > 200_000:
            _known_series.clear()
        _known_series.update(((run.pk, k), sid) for k, sid in cur.fetchall())
    return np.array([_known_series[(run.pk, k)] for k in keys], dtype=np.int64)


def _points_copy(raw: psycopg.Cursor[Any], table: str, pts: Points, sids: np.ndarray) -> None:
    data = copy_binary_rows([
        ("int8", sids[pts.key], None), ("int8", pts.step, None),
        ("float8", pts.value, pts.value_null), ("float8", pts.time, pts.time_null),
    ])
    with raw.copy(f"COPY {table} (series_id, step, value, time) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(COPY_BINARY_HEADER)
        copy.write(data)
        copy.write(COPY_BINARY_TRAILER)


def _points_store(raw: psycopg.Cursor[Any], pts: Points, sids: np.ndarray) -> Points:
    """Insert the points; returns those that were new (all of them, unless the batch was seen before)."""
    try:
        with transaction.atomic():  # a savepoint: a key conflict undoes only this COPY
            _points_copy(raw, "runs_metric", pts, sids)
        return pts
    except psycopg.errors.UniqueViolation:
        pass
    raw.execute("CREATE TEMP TABLE IF NOT EXISTS metric_in (LIKE runs_metric) ON COMMIT DELETE ROWS")
    _points_copy(raw, "metric_in", pts, sids)
    raw.execute("INSERT INTO runs_metric SELECT * FROM metric_in ON CONFLICT DO NOTHING RETURNING series_id, step")
    new = set(raw.fetchall())
    raw.execute("TRUNCATE metric_in")
    sid_of = sids[pts.key].tolist()
    mask = np.fromiter(((s, st) in new for s, st in zip(sid_of, pts.step.tolist(), strict=True)),
                       dtype=bool, count=len(pts))
    return pts.take(mask)


_ROLLUP_MERGE = """
INSERT INTO runs_metricrollup AS r (series_id, level, bucket, min_value, max_value, last_value, last_step,
                                    last_time)
SELECT series_id, level, bucket, min_value, max_value, last_value, last_step, last_time FROM rollup_in
ORDER BY series_id, level, bucket
ON CONFLICT (series_id, level, bucket) DO UPDATE SET
    min_value = LEAST(r.min_value, EXCLUDED.min_value),
    max_value = GREATEST(r.max_value, EXCLUDED.max_value),
    last_value = CASE WHEN EXCLUDED.last_step >= r.last_step THEN EXCLUDED.last_value ELSE r.last_value END,
    last_time = CASE WHEN EXCLUDED.last_step >= r.last_step THEN EXCLUDED.last_time ELSE r.last_time END,
    last_step = GREATEST(r.last_step, EXCLUDED.last_step)
"""


def _rollup_copy(raw: psycopg.Cursor[Any], table: str, columns: list[tuple[str, Any, Any]]) -> None:
    with raw.copy(f"COPY {table} (series_id, level, bucket, min_value, max_value, last_value, last_step, "
                  "last_time) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(COPY_BINARY_HEADER)
        copy.write(copy_binary_rows(columns))
        copy.write(COPY_BINARY_TRAILER)


def _rollups_merge(raw: psycopg.Cursor[Any], pts: Points, sids: np.ndarray) -> None:
    """Buckets past a series' last step cannot exist yet: they go in by COPY. Only the others (in
    a training loop, one boundary bucket per series and level) are merged with what is stored."""
    levels = rollups(pts)
    if not levels:
        return
    raw.execute("SELECT id, coalesce(last_step, -1) FROM runs_metricseries WHERE id = ANY(%s)", [sids.tolist()])
    last = dict(raw.fetchall())
    last_by_key = np.array([last[int(s)] for s in sids], dtype=np.int64)
    cat = np.concatenate
    key = cat([b.key for b in levels])
    level = cat([np.full(len(b.key), b.level, dtype=np.int16) for b in levels])
    bucket = cat([b.bucket for b in levels])
    mn, mx = cat([b.min for b in levels]), cat([b.max for b in levels])
    columns = [
        ("int8", sids[key], None), ("int2", level, None), ("int8", bucket, None),
        ("float8", mn, np.isnan(mn)), ("float8", mx, np.isnan(mx)),
        ("float8", cat([b.last for b in levels]), cat([b.last_null for b in levels])),
        ("int8", cat([b.last_step for b in levels]), None),
        ("float8", cat([b.last_time for b in levels]), cat([b.last_time_null for b in levels])),
    ]
    fresh = bucket > (last_by_key[key] >> np.array(SHIFTS, dtype=np.int64)[level])
    merge = ~fresh
    if fresh.any():
        try:
            with transaction.atomic():
                _rollup_copy(raw, "runs_metricrollup", [(t, v[fresh], None if n is None else n[fresh])
                                                        for t, v, n in columns])
        except psycopg.errors.UniqueViolation:  # rollups written by other means: merge them all
            merge = np.ones(len(bucket), dtype=bool)
    if merge.any():
        raw.execute("CREATE TEMP TABLE IF NOT EXISTS rollup_in (LIKE runs_metricrollup) ON COMMIT DELETE ROWS")
        _rollup_copy(raw, "rollup_in", [(t, v[merge], None if n is None else n[merge]) for t, v, n in columns])
        raw.execute(_ROLLUP_MERGE)
        raw.execute("TRUNCATE rollup_in")  # the next batch of this transaction (importer) starts empty


def _series_merge(raw: psycopg.Cursor[Any], pts: Points, sids: np.ndarray) -> None:
    st = series_stats(pts)
    raw.execute(
        """
        UPDATE runs_metricseries AS s SET
            count = s.count + st.n,
            first_step = LEAST(s.first_step, st.first),
            last_value = CASE WHEN s.last_step IS NULL OR st.last >= s.last_step THEN st.lastv
                              ELSE s.last_value END,
            last_step = GREATEST(s.last_step, st.last),
            min_value = LEAST(s.min_value, st.mn),
            max_value = GREATEST(s.max_value, st.mx)
        FROM (SELECT * FROM unnest(%s::bigint[], %s::int[], %s::bigint[], %s::bigint[], %s::float8[],
                                   %s::float8[], %s::float8[]) AS u(id, n, first, last, lastv, mn, mx)
              ORDER BY id) AS st
        WHERE s.id = st.id
        """,
        [sids[st["key"]].tolist(), st["count"], st["first"], st["last"], st["last_value"], st["min"], st["max"]],
    )


def metrics_ingest(*, run: Run, points: list[dict[str, Any]]) -> int:
    """Store points [{step, time?, values: {key: value}}]; returns how many were new.

    Values may be None, NaN or ±Infinity (a diverged loss is information): they are stored as
    given and left out of the rollups' min/max.
    """
    pts = points_from_batch(points)
    if not len(pts):
        return 0
    with transaction.atomic(), connection.cursor() as cur, connection.wrap_database_errors:
        # Batches of one run serialize here: they all touch the same series and rollup rows, and
        # one writer at a time is what keeps two concurrent batches from deadlocking on them.
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_METRICS, run.pk])
        sids = _series_ids(cur, run, pts.keys)
        raw = cur.cursor  # the psycopg cursor: COPY
        new = _points_store(raw, pts, sids)
        if len(new):
            _rollups_merge(raw, new, sids)
            _series_merge(raw, new, sids)
        return len(new)
