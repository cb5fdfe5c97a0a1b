"""Metric points: one statement a batch stores the points and folds them into rollups and series stats."""

from __future__ import annotations

import json
import math
from typing import Any

from django.db import connection, transaction

from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import IngestError

# Bucket widths (in steps) of the rollup levels; level i groups steps into ROLLUP_WIDTHS[i].
# Factor 16 between levels: 4 levels cover a million steps; readers merge up to 8x the wanted buckets.
ROLLUP_WIDTHS = (16, 256, 4096, 65536)
_LOCK_METRICS = 1  # pg advisory lock namespace: (this, run id)

_known_series: set[tuple[int, str]] = set()  # (run id, key) pairs known to exist; ids never change


def series_cache_clear() -> None:
    """Forget the known series: a batch that failed rolled back the series rows it had made."""
    _known_series.clear()


def _series_ensure(cur: Any, run: Run, keys: set[str]) -> None:
    missing = sorted(k for k in keys if (run.pk, k) not in _known_series)
    if not missing:
        return
    cur.execute(
        "INSERT INTO runs_metricseries (run_id, key, count) SELECT %s, k, 0 FROM unnest(%s::text[]) AS k "
        "ON CONFLICT (run_id, key) DO NOTHING",
        [run.pk, missing],
    )
    if len(_known_series) > 200_000:
        _known_series.clear()
    _known_series.update((run.pk, k) for k in missing)


def _rollup_levels_sql() -> str:
    return ", ".join(f"({level}, {width})" for level, width in enumerate(ROLLUP_WIDTHS))


# One statement does the whole batch in Postgres: expand the JSON points, insert the new ones, and
# fold only those (RETURNING) into the rollups and the series stats. min/max/last are idempotent,
# and count only sees new rows, so a re-sent batch changes nothing.
_METRICS_SQL = f"""
WITH pts AS (
    SELECT (p->>'step')::bigint AS step, (p->>'time')::float8 AS time, p->'values' AS vals
    FROM jsonb_array_elements(%(points)s::jsonb) AS p
), raw AS (
    SELECT DISTINCT ON (s.id, pts.step) s.id AS series_id, pts.step, (kv.value #>> '{{}}')::float8 AS value, pts.time
    FROM pts CROSS JOIN LATERAL jsonb_each(pts.vals) AS kv
    JOIN runs_metricseries s ON s.run_id = %(run)s AND s.key = kv.key
    ORDER BY s.id, pts.step
), new AS (
    INSERT INTO runs_metric (series_id, step, value, time) SELECT series_id, step, value, time FROM raw
    ON CONFLICT DO NOTHING RETURNING series_id, step, value, time
), fin AS (
    SELECT series_id, step, value, time,
           CASE WHEN value IN ('NaN', 'Infinity', '-Infinity') THEN NULL ELSE value END AS fv
    FROM new
), agg AS (
    SELECT series_id, w.level, step / w.width AS bucket, min(fv) AS mn, max(fv) AS mx,
           (array_agg(value ORDER BY step DESC))[1] AS lastv, max(step) AS lasts,
           (array_agg(time ORDER BY step DESC))[1] AS lastt
    FROM fin CROSS JOIN (VALUES {_rollup_levels_sql()}) AS w(level, width)
    GROUP BY series_id, w.level, step / w.width
), roll AS (
    INSERT INTO runs_metricrollup AS r (series_id, level, bucket, min_value, max_value, last_value, last_step,
                                        last_time)
    SELECT series_id, level, bucket, mn, mx, lastv, lasts, lastt FROM agg ORDER BY series_id, level, bucket
    ON CONFLICT (series_id, level, bucket) DO UPDATE SET
        min_value = LEAST(r.min_value, EXCLUDED.min_value),
        max_value = GREATEST(r.max_value, EXCLUDED.max_value),
        last_value = CASE WHEN EXCLUDED.last_step >= r.last_step THEN EXCLUDED.last_value ELSE r.last_value END,
        last_time = CASE WHEN EXCLUDED.last_step >= r.last_step THEN EXCLUDED.last_time ELSE r.last_time END,
        last_step = GREATEST(r.last_step, EXCLUDED.last_step)
), st AS (
    SELECT series_id, count(*) AS n, min(step) AS first, max(step) AS last,
           (array_agg(value ORDER BY step DESC))[1] AS lastv, min(fv) AS mn, max(fv) AS mx
    FROM fin GROUP BY series_id
), upd AS (
    UPDATE runs_metricseries AS s SET
        count = s.count + st.n,
        first_step = LEAST(s.first_step, st.first),
        last_value = CASE WHEN s.last_step IS NULL OR st.last >= s.last_step THEN st.lastv ELSE s.last_value END,
        last_step = GREATEST(s.last_step, st.last),
        min_value = LEAST(s.min_value, st.mn),
        max_value = GREATEST(s.max_value, st.mx)
    FROM st WHERE s.id = st.series_id
    RETURNING st.n
)
SELECT coalesce(sum(n), 0) FROM upd
"""


def _json_number(value: float | None) -> float | str | None:
    # JSON has no NaN/Infinity; Postgres reads these strings back as the float8 specials.
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def metrics_ingest(*, run: Run, points: list[dict[str, Any]]) -> int:
    """Store points [{step, time?, values: {key: value}}]; returns how many were new.

    Values may be None, NaN or ±Infinity (a diverged loss is information): they are stored as
    given and left out of the rollups' min/max.
    """
    keys: set[str] = set()
    special = False
    for i, point in enumerate(points):
        for key, value in point["values"].items():
            if key not in keys:
                if not key or len(key) > 500:
                    raise IngestError(f"points[{i}].values: metric key must have 1 to 500 characters")
                keys.add(key)
            if value is not None and not math.isfinite(value):
                special = True
    if not keys:
        return 0
    if special:
        points = [{**p, "values": {k: _json_number(v) for k, v in p["values"].items()}} for p in points]
    payload = json.dumps(points, ensure_ascii=False, separators=(",", ":"))
    with transaction.atomic(), connection.cursor() as cur:
        # Batches of one run serialize here: they all touch the same series rows, and a fixed
        # order of row locks is what keeps two concurrent batches from deadlocking.
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_METRICS, run.pk])
        _series_ensure(cur, run, keys)
        cur.execute(_METRICS_SQL, {"points": payload, "run": run.pk})
        return int(cur.fetchone()[0])
