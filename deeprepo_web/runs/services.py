"""Writes for runs: create / update / finish, and the bulk, idempotent ingest of metrics and rollouts.

Ingest goes around the ORM on purpose: one round trip per table per batch (unnest arrays, COPY),
ON CONFLICT DO NOTHING for retries. Every batch is one transaction.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import math
import re
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.analysis import behaviour as behaviour_stats
from deeprepo_web.runs.models import (
    FINAL_RUN_STATUSES,
    BlobRef,
    Run,
    RunKind,
    RunStatus,
)
from deeprepo_web.storage import blob_put
from deeprepo_web.text import clean_text

log = logging.getLogger(__name__)

# Bucket widths (in steps) of the rollup levels; level i groups steps into ROLLUP_WIDTHS[i].
# Factor 16 between levels: 4 levels cover a million steps; readers merge up to 8x the wanted buckets.
ROLLUP_WIDTHS = (16, 256, 4096, 65536)
# What a row keeps of a body that went to the blob store.
PREVIEW_CHARS = 16 * 1024

RUN_FIELDS = ("name", "kind", "status", "model", "adapter", "environment", "method", "config", "tags", "notes")


class IngestError(ValueError):
    """Bad input found by a service; the message names the field."""


def _ts(value: float | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(value, tz=UTC)


# ---------------------------------------------------------------- runs


def run_create(
    *,
    project: Project,
    name: str,
    kind: str = RunKind.TRAIN,
    status: str = RunStatus.RUNNING,
    model: str = "",
    adapter: str = "",
    environment: str = "",
    method: str = "",
    config: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    notes: str = "",
    source: str = "sdk",
    external_id: str = "",
    parent: Run | None = None,
    checkpoint_step: int | None = None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    summary: dict[str, Any] | None = None,
) -> tuple[Run, bool]:
    """Returns (run, created). With an external_id, a retry or re-import returns the same run."""
    fields: dict[str, Any] = {
        "name": name,
        "kind": kind,
        "status": status,
        "model": model,
        "adapter": adapter,
        "environment": environment,
        "method": method,
        "config": config or {},
        "tags": tags or [],
        "notes": notes,
        "parent": parent,
        "checkpoint_step": checkpoint_step,
        "started_at": started_at or (timezone.now() if status != RunStatus.QUEUED else None),
        "finished_at": finished_at,
        "summary": summary or {},
    }
    if external_id:
        run, created = Run.objects.get_or_create(
            project=project, source=source, external_id=external_id, defaults=fields
        )
        return run, created
    return Run.objects.create(project=project, source=source, **fields), True


def run_update(*, run: Run, **changes: Any) -> Run:
    unknown = set(changes) - set(RUN_FIELDS) - {"parent", "checkpoint_step", "summary", "started_at", "finished_at"}
    if unknown:
        raise IngestError(f"unknown run field(s): {', '.join(sorted(unknown))}")
    for field, value in changes.items():
        setattr(run, field, value)
    if changes.get("status") == RunStatus.RUNNING and run.started_at is None:
        run.started_at = timezone.now()
    if changes.get("status") in FINAL_RUN_STATUSES and run.finished_at is None:
        run.finished_at = timezone.now()
    run.save()
    return run


def run_finish(*, run: Run, status: str = RunStatus.FINISHED) -> Run:
    if status not in FINAL_RUN_STATUSES:
        raise IngestError(f"status: {status!r} is not a final status ({', '.join(sorted(FINAL_RUN_STATUSES))})")
    return run_update(run=run, status=status)


def run_delete(*, run: Run) -> dict[str, int]:
    """Delete a run with its rows and its stored objects; returns counts of what went.

    Objects go first: when the store is down this raises StorageUnavailable and nothing is
    deleted. Blobs are shared by content, so one is removed only when no other run refers to it.
    """
    from deeprepo_web import storage
    from deeprepo_web.runs.models import Artifact

    store = storage.backend()
    for key, upload_id in Artifact.objects.filter(run=run).exclude(upload_id="").values_list("storage_key", "upload_id"):
        store.multipart_abort(key, upload_id)
    objects = store.delete_prefix(storage.run_prefix(run.project_id, run.public_id))
    shas = list(BlobRef.objects.filter(run=run).values_list("sha", flat=True))
    with transaction.atomic(), connection.cursor() as cur:
        # The big tables go by set-based SQL (the ORM's cascade would load every row); Metric and
        # MetricRollup have no FK constraint on purpose, so they never cascade by themselves.
        series = "SELECT id FROM runs_metricseries WHERE run_id = %s"
        cur.execute(f"DELETE FROM runs_metric WHERE series_id IN ({series})", [run.pk])
        metrics = cur.rowcount
        cur.execute(f"DELETE FROM runs_metricrollup WHERE series_id IN ({series})", [run.pk])
        rollouts_q = "SELECT id FROM runs_rollout WHERE run_id = %s"
        cur.execute(f"DELETE FROM runs_toolcall WHERE rollout_id IN ({rollouts_q})", [run.pk])
        cur.execute(f"DELETE FROM runs_turn WHERE rollout_id IN ({rollouts_q})", [run.pk])
        cur.execute("DELETE FROM runs_rollout WHERE run_id = %s", [run.pk])
        rollouts = cur.rowcount
        run.delete()  # the small rest (series, artifacts, blob refs, other apps' links) through the ORM
    blobs = 0
    still_used = set(BlobRef.objects.filter(sha__in=shas).values_list("sha", flat=True))
    for sha in shas:
        if sha in still_used:
            continue
        try:
            storage.blob_delete(sha)
            blobs += 1
        except storage.StorageError as exc:
            # The rows are gone already; an orphan blob wastes space but harms nobody.
            log.warning("run_delete: blob %s kept: %s", sha, exc)
    return {"objects": objects, "blobs": blobs, "metrics": metrics, "rollouts": rollouts}


_json_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def _dumps(value: Any) -> str:
    """JSON text for a jsonb column. orjson encodes ~9x faster than json (which was a tenth of an
    import); NaN and Infinity become null, as clean_deep makes them. What orjson refuses (integers
    past 64 bits, lone surrogates, odd types) goes to json, so those behave as they always did."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return _json_encode(value)


def _offload(text: str | None, refs: set[str], limit: int) -> tuple[str, str, int]:
    """(kept text, blob sha or '', full size in bytes). Bodies past `limit` bytes go to the store."""
    if not text:
        return "", "", 0
    if text.isascii() and len(text) <= limit:
        return text, "", len(text)  # most bodies: the size without encoding a copy
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, "", len(data)
    sha = blob_put(data)
    refs.add(sha)
    return text[:PREVIEW_CHARS], sha, len(data)


# An inline image, bare or as a Markdown image: `![alt](data:image/png;base64,....)`.
_DATA_IMAGE = re.compile(
    r"(?:!\[(?P<alt>[^\]\n]{0,200})\]\()?data:image/(?P<fmt>png|jpeg|jpg|gif|webp);base64,"
    r"(?P<b64>(?:[A-Za-z0-9+/]|\r?\n){16,}={0,2})(?P<close>\))?"
)
# Below this, a data URI costs less in the row than a round trip to the store.
_MIN_IMAGE_BYTES = 1024


def _extract_images(text: str, refs: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """Move inline base64 images to the blob store; the text keeps `![alt](blob:<sha>)` markers."""
    if "data:image/" not in text:  # the common case costs one substring search
        return text, []
    images: list[dict[str, Any]] = []

    def swap(m: re.Match[str]) -> str:
        b64, alt, close = m.group("b64"), m.group("alt"), m.group("close")
        if len(b64) < _MIN_IMAGE_BYTES * 4 // 3 or (alt is not None and not close):
            return m.group(0)  # tiny, or an unterminated Markdown image: left as written
        try:
            raw = base64.b64decode("".join(b64.split()), validate=True)
        except (binascii.Error, ValueError):
            return m.group(0)  # not base64 after all: leave the text as it was
        sha = blob_put(raw)
        refs.add(sha)
        fmt = "jpeg" if m.group("fmt") == "jpg" else m.group("fmt")
        images.append({"sha": sha, "type": f"image/{fmt}", "size": len(raw)})
        if alt is not None:
            return f"![{alt}](blob:{sha})"
        # A bare data URI: its ')' (if any) belonged to the surrounding text.
        return f"![image](blob:{sha})" + (close or "")

    return _DATA_IMAGE.sub(swap, text), images


def _body(text: str | None, refs: set[str], limit: int) -> tuple[str, str, int, list[dict[str, Any]]]:
    """Images out first, then the size threshold on what is left."""
    images: list[dict[str, Any]] = []
    if text:
        text, images = _extract_images(text, refs)
    kept, blob, size = _offload(text, refs, limit)
    return kept, blob, size, images


def _blob_refs_write(cur: Any, run: Run, refs: set[str]) -> None:
    if refs:
        cur.execute(
            "INSERT INTO runs_blobref (sha, run_id) SELECT s, %s FROM unnest(%s::text[]) AS s "
            "ON CONFLICT DO NOTHING",
            [run.pk, sorted(refs)],
        )


# ---------------------------------------------------------------- metrics

_known_series: set[tuple[int, str]] = set()  # (run id, key) pairs known to exist; ids never change


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


_LOCK_METRICS = 1


# ---------------------------------------------------------------- rollouts

# Array parameters must be of one Python type: parsers and callers mix 1 and 1.0 freely.
def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def rollout_uid(record: dict[str, Any]) -> str:
    """The client's uid, or a hash of the content: the same rollout sent twice is stored once."""
    uid = record.get("uid")
    if uid:
        return str(uid)[:64]
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


def _execute_binary(sql: str, params: list[Any]) -> psycopg.Cursor[Any]:
    """Run `sql` with binary parameters on Django's connection (so inside its transaction).

    Django binds parameters client-side, which quotes big text arrays (prompts, answers, metrics)
    character by character in Python; binary parameters (%b) cost a copy. Errors come out as Django's
    (DatabaseError, IntegrityError, ...) like those of any other query here.
    """
    with connection.wrap_database_errors:
        cur = psycopg.Cursor(connection.connection)
        cur.execute(sql, params)
    return cur


def _examples_upsert(cur: Any, run: Run, records: list[dict[str, Any]]) -> dict[str, int]:
    by_hash: dict[str, tuple[str, Any, str, Any]] = {}
    for r in records:
        key = r["example_key"]
        h = _key_hash(key)
        if h not in by_hash or (by_hash[h][1] is None and r.get("prompt") is not None):
            by_hash[h] = (key, r.get("prompt"), r.get("oracle") or "", r.get("example_info") or {})
    hashes = sorted(by_hash)
    keys = [by_hash[h][0] for h in hashes]
    prompts = [None if by_hash[h][1] is None else _dumps(by_hash[h][1]) for h in hashes]
    oracles = [by_hash[h][2] for h in hashes]
    infos = [_dumps(by_hash[h][3]) for h in hashes]
    _execute_binary(
        "INSERT INTO runs_example AS e (project_id, environment, key, key_hash, prompt, oracle, info, created_at) "
        "SELECT %b, %b, k, h, p::jsonb, o, i::jsonb, now() "
        "FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[]) AS u(k, h, p, o, i) "
        "ON CONFLICT (project_id, environment, key_hash) DO UPDATE SET "
        "prompt = COALESCE(e.prompt, EXCLUDED.prompt), "
        "oracle = CASE WHEN e.oracle = '' THEN EXCLUDED.oracle ELSE e.oracle END "
        "WHERE (e.prompt IS NULL AND EXCLUDED.prompt IS NOT NULL) OR (e.oracle = '' AND EXCLUDED.oracle <> '')",
        [run.project_id, run.environment, keys, hashes, prompts, oracles, infos],
    )
    cur.execute(
        "SELECT key_hash, id FROM runs_example WHERE project_id = %s AND environment = %s AND key_hash = ANY(%s)",
        [run.project_id, run.environment, hashes],
    )
    return dict(cur.fetchall())


def _next_ids(cur: Any, table: str, n: int) -> list[int]:
    if n == 0:
        return []
    # The sequence is looked up once: pg_get_serial_sequence per row cost ~6 µs an id, a sixth of
    # Postgres's time in an import; MATERIALIZED keeps the planner from inlining it into every row.
    cur.execute(
        "WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence(%s, 'id')::regclass AS seq) "
        "SELECT nextval(s.seq) FROM s, generate_series(1, %s)",
        [table, n],
    )
    return [row[0] for row in cur.fetchall()]


def _count_calls(calls: list[dict[str, Any]]) -> int:
    return sum(1 + _count_calls(c.get("sub_calls") or []) for c in calls)


def rollout_behaviour(record: dict[str, Any]) -> dict[str, Any]:
    """Behaviour counts of one rollout record, kept in Rollout.metrics["behaviour"].

    Computed here, from the record already in memory, so pages never walk turns and tool calls.
    Its only text (tool and model names, an error line) comes from the model: cleaned for jsonb.
    """
    out = behaviour_stats.rollout_counts(record)
    out["tool_calls"] = {clean_text(name): n for name, n in out["tool_calls"].items()}
    if "sub_tokens" in out:
        out["sub_tokens"] = {clean_text(model): v for model, v in out["sub_tokens"].items()}
    if "repeated_error" in out:
        out["repeated_error"] = clean_text(out["repeated_error"])
    return out


def rollouts_ingest(*, run: Run, rollouts: list[dict[str, Any]]) -> int:
    """Store rollouts with their turns and tool calls; returns how many were new."""
    if not rollouts:
        return 0
    uids = [rollout_uid(r) for r in rollouts]
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cur:
        example_ids = _examples_upsert(cur, run, rollouts)
        cols: list[list[Any]] = [[] for _ in range(19)]
        seen: set[str] = set()
        for r, uid in zip(rollouts, uids, strict=True):
            if uid in seen:
                continue
            seen.add(uid)
            turns = r.get("turns") or []
            num_turns = r.get("num_turns")
            if num_turns is None:
                num_turns = sum(1 for t in turns if t.get("role") == "assistant")
            values = (
                uid,
                example_ids[_key_hash(r["example_key"])],
                _int(r.get("step")),
                _int(r.get("sample_index")),
                _float(r.get("reward")),
                _dumps(r.get("reward_components") or {}),
                _float(r.get("advantage")),
                _int(num_turns),
                _int(r.get("input_tokens")),
                _int(r.get("output_tokens")),
                _float(r.get("cost")),
                bool(r.get("is_truncated")),
                (r.get("stop_condition") or "")[:200],
                r.get("error") or "",
                _float(r.get("duration")),
                r.get("final_answer") or "",
                _dumps({**(r.get("metrics") or {}), "behaviour": rollout_behaviour(r)}),
                now,
                run.pk,
            )
            for col, v in zip(cols, values, strict=True):
                col.append(v)
        inserted = _execute_binary(
            "INSERT INTO runs_rollout (uid, example_id, step, sample_index, reward, reward_components, advantage, "
            "num_turns, input_tokens, output_tokens, cost, is_truncated, stop_condition, error, duration, "
            "final_answer, metrics, created_at, run_id) "
            "SELECT u, e, s, si, rw, rc::jsonb, adv, nt, it, ot, c, tr, sc, er, d, fa, m::jsonb, ca, rid "
            "FROM unnest(%b::text[], %b::bigint[], %b::int[], %b::int[], %b::float8[], %b::text[], %b::float8[], "
            "%b::int[], %b::bigint[], %b::bigint[], %b::float8[], %b::bool[], %b::text[], %b::text[], "
            "%b::float8[], %b::text[], %b::text[], %b::timestamptz[], %b::bigint[]) "
            "AS x(u, e, s, si, rw, rc, adv, nt, it, ot, c, tr, sc, er, d, fa, m, ca, rid) "
            "ON CONFLICT (run_id, uid) DO NOTHING RETURNING uid, id",
            cols,
        )
        new_ids = dict(inserted.fetchall())
        if not new_ids:
            return 0
        fresh = [(new_ids[u], r) for r, u in zip(rollouts, uids, strict=True) if u in new_ids]
        refs: set[str] = set()
        _turns_write(cur, fresh, refs)
        _blob_refs_write(cur, run, refs)
    return len(new_ids)


class _CallRows:
    """Tool-call rows of a batch, nested calls after their parent. A class, not a recursive closure:
    the closure would be a reference cycle holding every row until the cyclic collector ran."""

    def __init__(self, ids: list[int], refs: set[str], limit: int) -> None:
        self.ids = iter(ids)
        self.refs = refs
        self.limit = limit
        self.rows: list[tuple[Any, ...]] = []

    def add(self, calls: list[dict[str, Any]], turn_id: int, rollout_id: int, parent: int | None) -> None:
        for index, call in enumerate(calls):
            call_id = next(self.ids)
            output, blob, size, _ = _body(call.get("output"), self.refs, self.limit)
            arguments = call.get("arguments")
            self.rows.append((
                call_id, turn_id, rollout_id, parent, index, (call.get("call_id") or "")[:200],
                (call.get("name") or "")[:500], None if arguments is None else _dumps(arguments),
                output, blob, size, bool(call.get("is_error")), call.get("duration"),
                (call.get("model") or "")[:500], call.get("input_tokens"), call.get("output_tokens"),
                call.get("cost"),
            ))
            self.add(call.get("sub_calls") or [], turn_id, rollout_id, call_id)


def _turns_write(cur: Any, fresh: list[tuple[int, dict[str, Any]]], refs: set[str]) -> None:
    n_turns = sum(len(r.get("turns") or []) for _, r in fresh)
    n_calls = sum(_count_calls(t.get("tool_calls") or []) for _, r in fresh for t in r.get("turns") or [])
    turn_ids = iter(_next_ids(cur, "runs_turn", n_turns))
    limit = settings.DEEPREPO_BLOB_THRESHOLD  # read once: a settings lookup per body showed in profiles
    calls = _CallRows(_next_ids(cur, "runs_toolcall", n_calls), refs, limit)

    # Turn rows go into the COPY as they are built, so Postgres stores them while Python builds the
    # rest; tool calls (a second COPY, which cannot start before the first ends) are collected.
    raw = cur.cursor  # the psycopg cursor: COPY is the fastest way in
    with raw.copy(
        "COPY runs_turn (id, rollout_id, index, role, content, content_blob, content_size, reasoning, "
        "input_tokens, output_tokens, latency, model, metadata) FROM STDIN"
    ) as copy:
        for rollout_id, r in fresh:
            for index, turn in enumerate(r.get("turns") or []):
                turn_id = next(turn_ids)
                content, blob, size, images = _body(turn.get("content"), refs, limit)
                metadata = turn.get("metadata") or {}
                if images:
                    metadata = {**metadata, "images": [*(metadata.get("images") or []), *images]}
                copy.write_row((
                    turn_id, rollout_id, index, (turn.get("role") or "")[:32], content, blob, size,
                    turn.get("reasoning") or "", turn.get("input_tokens"), turn.get("output_tokens"),
                    turn.get("latency"), (turn.get("model") or "")[:500], _dumps(metadata) if metadata else "{}",
                ))
                calls.add(turn.get("tool_calls") or [], turn_id, rollout_id, None)
    if calls.rows:
        with raw.copy(
            "COPY runs_toolcall (id, turn_id, rollout_id, parent_id, index, call_id, name, arguments, output, "
            "output_blob, output_size, is_error, duration, model, input_tokens, output_tokens, cost) FROM STDIN"
        ) as copy:
            for row in calls.rows:
                copy.write_row(row)
