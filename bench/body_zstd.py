"""Where turn and tool-call bodies could live (issue 30 item 1): zstd per body or per rollout, with and
without a dictionary trained on the project's own text, against what Postgres stores today; and what the
turn and tool-call rows cost once their bodies are gone.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        uv run --with zstandard==0.25.0 python bench/body_zstd.py --database <db> [--project slug] [--rollouts 20000]

Reads up to --rollouts rollouts of a filled database (a seed_scale one, bench/ingest.py's rollouts, or
real files imported with `manage.py import`). A rollout's bodies are its turns' content and reasoning,
its tool calls' arguments and output, its answer and error, in turn order (the raw text bench/storage.py
counts). The dictionary is trained on every other rollout (a project's dictionary would come from its
earlier rollouts of the same runs) and every figure is taken on the others, so it never compresses text
it was trained on. `zstandard` is not a dependency of the
project: this measures, it builds nothing. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import db_url  # noqa: E402

DICT_BYTES = 64 * 1024


def rollout_bodies(conn: psycopg.Connection[Any], project: str | None, limit: int) -> tuple[list[int], list[list[bytes]]]:
    scope = "JOIN runs_run r ON r.id = ro.run_id JOIN accounts_project p ON p.id = r.project_id WHERE p.slug = %s" \
        if project else "WHERE %s::text IS NULL"
    ids = [row[0] for row in conn.execute(f"SELECT ro.id FROM runs_rollout ro {scope} ORDER BY ro.id LIMIT %s",
                                          [project, limit])]
    bodies: dict[int, list[bytes]] = {i: [] for i in ids}
    # Turn order: each turn's content and reasoning, then its calls' arguments and output.
    rows = conn.execute(
        "SELECT t.rollout_id, t.content, t.reasoning, "
        "  coalesce((SELECT array_agg(coalesce(c.arguments::text, '') || c.output ORDER BY c.id) "
        "            FROM runs_toolcall c WHERE c.rollout_id = t.rollout_id AND c.turn_id = t.id), '{}') "
        "FROM runs_turn t WHERE t.rollout_id = ANY(%s) ORDER BY t.rollout_id, t.index", [ids])
    for rid, content, reasoning, calls in rows:
        bodies[rid] += [s.encode() for s in (content, reasoning, *calls) if s]
    for rid, answer, error in conn.execute("SELECT id, final_answer, error FROM runs_rollout WHERE id = ANY(%s)", [ids]):
        bodies[rid] += [s.encode() for s in (answer, error) if s]
    return ids, [bodies[i] for i in ids]


def folded_rollouts(conn: psycopg.Connection[Any], ids: list[int]) -> list[list[bytes]]:
    """Each rollout's turns with their tool calls as one JSON document, every column included: what one
    row (or object) per rollout would hold if turns and calls stopped being rows of their own."""
    rows = conn.execute(
        "SELECT t.rollout_id, json_agg(json_build_object('turn', to_jsonb(t) - 'id' - 'rollout_id', 'calls', "
        "  (SELECT coalesce(json_agg(to_jsonb(c) - 'id' - 'turn_id' - 'rollout_id' ORDER BY c.id), '[]') "
        "   FROM runs_toolcall c WHERE c.rollout_id = t.rollout_id AND c.turn_id = t.id)) ORDER BY t.index)::text "
        "FROM runs_turn t WHERE t.rollout_id = ANY(%s) GROUP BY t.rollout_id", [ids])
    found = {rid: [doc.encode()] for rid, doc in rows}
    return [found.get(i, []) for i in ids]


def postgres_today(conn: psycopg.Connection[Any], ids: list[int]) -> int:
    """The bodies' bytes as Postgres holds them now (inline or TOASTed, compressed where it chose to)."""
    return sum(conn.execute(sql, [ids]).fetchone()[0] or 0 for sql in (
        "SELECT sum(pg_column_size(content) + pg_column_size(reasoning)) FROM runs_turn WHERE rollout_id = ANY(%s)",
        "SELECT sum(pg_column_size(output) + coalesce(pg_column_size(arguments), 0)) FROM runs_toolcall "
        "WHERE rollout_id = ANY(%s)",
        "SELECT sum(pg_column_size(final_answer) + pg_column_size(error)) FROM runs_rollout WHERE id = ANY(%s)"))


def _rows_size(conn: psycopg.Connection[Any], name: str, turn_columns: str, call_columns: str, ids: list[int]) -> int:
    """Bytes of the sample's turn and tool-call rows copied into fresh tables (no dead space) with the real
    tables' indexes (runs_turn: pkey, (rollout, index); runs_toolcall: pkey, (rollout) since runs 0017)."""
    turn, call = f"scratch_{name}_turn", f"scratch_{name}_call"
    conn.execute(f"DROP TABLE IF EXISTS {turn}, {call}")
    conn.execute(f"CREATE TABLE {turn} AS SELECT {turn_columns} FROM runs_turn WHERE rollout_id = ANY(%s)", [ids])
    conn.execute(f"CREATE TABLE {call} AS SELECT {call_columns} FROM runs_toolcall WHERE rollout_id = ANY(%s)", [ids])
    for sql in (f"ALTER TABLE {turn} ADD PRIMARY KEY (id)", f"CREATE UNIQUE INDEX ON {turn} (rollout_id, index)",
                f"ALTER TABLE {call} ADD PRIMARY KEY (id)", f"CREATE INDEX ON {call} (rollout_id)"):
        conn.execute(sql)
    size = sum(conn.execute("SELECT pg_total_relation_size(%s::regclass)", [t]).fetchone()[0] for t in (turn, call))
    conn.execute(f"DROP TABLE {turn}, {call}")
    return int(size)


def today_rows(conn: psycopg.Connection[Any], ids: list[int]) -> int:
    """The sample's turn and tool-call rows as stored now."""
    return _rows_size(conn, "full", "*", "*", ids)


def thin_rows(conn: psycopg.Connection[Any], ids: list[int]) -> int:
    """The same rows as they would be with the bodies elsewhere: every column but the bodies, plus an
    offset and a length (int4 each) per body into the rollout's object."""
    return _rows_size(
        conn, "thin",
        "id, rollout_id, index, role, content_blob, content_size, input_tokens, output_tokens, latency, model, "
        "metadata, 0::int AS content_at, 0::int AS content_len, 0::int AS reasoning_at, 0::int AS reasoning_len",
        "id, turn_id, rollout_id, parent_id, index, call_id, name, output_blob, output_size, is_error, duration, "
        "model, input_tokens, output_tokens, cost, 0::int AS arguments_at, 0::int AS arguments_len, "
        "0::int AS output_at, 0::int AS output_len", ids)


def zstd_sizes(train: list[list[bytes]], test: list[list[bytes]], raw: int, *, per_body: bool = True) -> dict[str, Any]:
    """zstd per rollout (and per body, unless each rollout is one body already), with and without a dictionary."""
    samples = [b for r in train for b in r if b] or [b"-"]
    try:
        dictionary = zstandard.train_dictionary(DICT_BYTES, samples)
    except zstandard.ZstdError as exc:  # too little text to train on
        dictionary = None
        print(f"no dictionary: {exc}", file=sys.stderr)
    out: dict[str, Any] = {"rollouts": len(test)}
    plain = zstandard.ZstdCompressor(level=3)
    variants: list[tuple[str, zstandard.ZstdCompressor, bool]] = [("per_body_zstd3", plain, False),
                                                                  ("per_rollout_zstd3", plain, True)]
    if dictionary is not None:
        with_dict = zstandard.ZstdCompressor(level=3, dict_data=dictionary)
        variants += [("per_body_zstd3_dict", with_dict, False), ("per_rollout_zstd3_dict", with_dict, True),
                     ("per_rollout_zstd19_dict", zstandard.ZstdCompressor(level=19, dict_data=dictionary), True)]
    for name, comp, joined in variants:
        if not joined and not per_body:
            continue
        t0 = time.process_time()
        blobs = [comp.compress(b"".join(r)) for r in test] if joined else [comp.compress(b) for r in test for b in r]
        cpu = time.process_time() - t0
        size = sum(len(b) for b in blobs)
        dec = zstandard.ZstdDecompressor(dict_data=dictionary) if "dict" in name else zstandard.ZstdDecompressor()
        t0 = time.process_time()
        for b in blobs:
            dec.decompress(b)
        dcpu = time.process_time() - t0
        out[name] = {"over_raw": round(size / raw, 3), "bytes_per_rollout": round(size / len(test)),
                     "compress_mb_s": round(raw / 2**20 / max(cpu, 1e-9)),
                     "decompress_mb_s": round(raw / 2**20 / max(dcpu, 1e-9))}
        print(f"{name}: {size / raw:.3f}x raw, {out[name]['compress_mb_s']} MB/s in, "
              f"{out[name]['decompress_mb_s']} MB/s out", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--database", required=True)
    ap.add_argument("--project", help="only this project's rollouts (slug)")
    ap.add_argument("--rollouts", type=int, default=20_000)
    a = ap.parse_args()
    with psycopg.connect(db_url(a.database), autocommit=True) as conn:
        ids, bodies = rollout_bodies(conn, a.project, a.rollouts)
        test_ids, train, test = ids[1::2], bodies[0::2], bodies[1::2]
        raw = sum(len(b) for r in test for b in r)
        n = len(test_ids)
        result: dict[str, Any] = {"bench": "body_zstd", "database": a.database, "project": a.project,
                                  "raw_text_bytes_per_rollout": round(raw / n),
                                  "postgres_bodies_over_raw": round(postgres_today(conn, test_ids) / raw, 3),
                                  "turn_call_rows_today_bytes_per_rollout": round(today_rows(conn, test_ids) / n),
                                  "turn_call_rows_thin_bytes_per_rollout": round(thin_rows(conn, test_ids) / n),
                                  "zstd": zstd_sizes(train, test, raw)}
        # Turns and calls folded into one document per rollout (all their columns), against the same raw text.
        folded = folded_rollouts(conn, ids)
        result["folded_json_over_raw"] = round(sum(len(b) for r in folded[1::2] for b in r) / raw, 3)
        result["folded_zstd"] = zstd_sizes(folded[0::2], folded[1::2], raw, per_body=False)  # one body each
    print(json.dumps(result))


if __name__ == "__main__":
    main()
