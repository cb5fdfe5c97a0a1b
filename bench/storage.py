"""Bytes on disk per rollout, and what TOAST compression (pglz, lz4, a lower toast_tuple_target) would
save on turn and tool-call bodies: issue 30 item 1's measurement.

    python bench/storage.py --database deeprepo_bench_scale [--sample-rollouts 20000]

Reads a database seeded by bench/search.py (seed_scale + the search index). Part one sizes every
table, index and the search table per rollout against the raw text. Part two copies the bodies of a
sample of rollouts into scratch tables, each with one compression setting, forcing every value to be
compressed afresh (`|| ''`: Postgres keeps an already-compressed value as it is), and sizes them.
Part three does the same with real agent traces ($DEEPREPO_SAMPLES, else ../shared/samples: OpenHands,
SWE-agent), whose bodies are longer than seed_scale's; without them it is skipped and says why.
Scratch tables are dropped at the end.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import db_url, samples_dir  # noqa: E402

# (name, column compression, toast_tuple_target): Postgres compresses a row only past the target
# (2 kB by default), so short bodies stay raw whatever the method.
VARIANTS = [("pglz", "pglz", None), ("lz4", "lz4", None), ("lz4_t128", "lz4", 128)]
# runs_turn and runs_toolcall are views over runs_rolloutturns (runs 0020): they have no size of their own.
TABLES = ["runs_rollout", "runs_rolloutturns", "runs_metric", "search_doc", "runs_example"]


def _one(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> Any:
    row = conn.execute(sql, params).fetchone()
    return row[0] if row else None


def disk_per_rollout(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    rollouts = _one(conn, "SELECT count(*) FROM runs_rollout")
    raw = _one(conn, """SELECT
        (SELECT coalesce(sum(octet_length(content) + octet_length(reasoning)), 0) FROM runs_turn)
      + (SELECT coalesce(sum(octet_length(output) + octet_length(coalesce(arguments::text, ''))), 0) FROM runs_toolcall)
      + (SELECT coalesce(sum(octet_length(final_answer) + octet_length(error)), 0) FROM runs_rollout)""")
    # Each table with its TOAST and indexes (none is partitioned; a missing one counts 0).
    sizes = {t: _one(conn, "SELECT pg_total_relation_size(to_regclass(%s))", [t]) or 0 for t in TABLES}
    run_tables = sum(v for k, v in sizes.items() if k != "search_doc" and k != "runs_metric")
    return {
        "rollouts": rollouts, "raw_text_bytes_per_rollout": round(raw / rollouts),
        "rollout_tables_bytes_per_rollout": round(run_tables / rollouts),
        "search_bytes_per_rollout": round(sizes["search_doc"] / rollouts),
        "disk_over_raw": round((run_tables + sizes["search_doc"]) / raw, 2),
        "table_mb": {k: round(v / 2**20, 1) for k, v in sizes.items()},
    }


def _scratch(conn: psycopg.Connection[Any], name: str, method: str, target: int | None, columns: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE UNLOGGED TABLE {name} ({columns})")
    for col in [c.split()[0] for c in columns.split(",") if "text" in c or "jsonb" in c]:
        conn.execute(f"ALTER TABLE {name} ALTER COLUMN {col} SET COMPRESSION {method}")
    if target:
        conn.execute(f"ALTER TABLE {name} SET (toast_tuple_target = {target})")


def compression_on_seeded(conn: psycopg.Connection[Any], sample: int) -> dict[str, Any]:
    sample = min(sample, _one(conn, "SELECT count(*) FROM runs_rollout"))  # a small database: all of it
    last = _one(conn, "SELECT id FROM runs_rollout ORDER BY id OFFSET %s LIMIT 1", [sample - 1])
    raw = _one(conn, "SELECT sum(octet_length(content) + octet_length(reasoning)) FROM runs_turn WHERE rollout_id <= %s",
               [last]) + _one(conn, "SELECT sum(octet_length(output) + octet_length(coalesce(arguments::text, ''))) "
                              "FROM runs_toolcall WHERE rollout_id <= %s", [last])
    out: dict[str, Any] = {"sample_rollouts": sample, "raw_body_bytes_per_rollout": round(raw / sample)}
    for name, method, target in VARIANTS:
        _scratch(conn, f"scratch_turn_{name}", method, target, "id bigint, content text, reasoning text")
        _scratch(conn, f"scratch_call_{name}", method, target, "id bigint, arguments jsonb, output text")
        t0 = time.monotonic()
        conn.execute(f"INSERT INTO scratch_turn_{name} SELECT id, content || '', reasoning || '' FROM runs_turn "
                     "WHERE rollout_id <= %s", [last])
        conn.execute(f"INSERT INTO scratch_call_{name} SELECT id, arguments::text::jsonb, output || '' "
                     "FROM runs_toolcall WHERE rollout_id <= %s", [last])
        seconds = time.monotonic() - t0
        size = sum(_one(conn, "SELECT pg_table_size(%s::regclass)", [f"scratch_{k}_{name}"]) for k in ("turn", "call"))
        out[name] = {"bytes_per_rollout": round(size / sample), "over_raw": round(size / raw, 2),
                     "insert_s": round(seconds, 1)}
        print(f"seeded bodies, {name}: {size / sample:.0f} B/rollout ({size / raw:.2f}x raw), {seconds:.1f}s",
              file=sys.stderr)
        conn.execute(f"DROP TABLE scratch_turn_{name}, scratch_call_{name}")
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def real_bodies(samples: Path) -> list[str]:
    """The long strings of the real agent traces: turn texts, observations, tool outputs, patches."""
    bodies: list[str] = []
    for path in sorted(samples.glob("openhands/*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                bodies += _strings(json.loads(line))
    for path in sorted(samples.glob("swe_agent/*.traj")):
        bodies += _strings(json.loads(path.read_text()))
    return [b for b in bodies if len(b) >= 200]  # bodies, not the traces' short metadata fields


def compression_on_real(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    samples = samples_dir()
    bodies = real_bodies(samples)
    raw = sum(len(b.encode()) for b in bodies)
    out: dict[str, Any] = {"samples": str(samples), "bodies": len(bodies), "raw_bytes": raw}
    if not bodies:
        out["skipped"] = f"no OpenHands or SWE-agent trace under {samples} (set DEEPREPO_SAMPLES)"
        print(f"real bodies: skipped, {out['skipped']}", file=sys.stderr)
        return out
    for name, method, target in VARIANTS:
        _scratch(conn, f"scratch_real_{name}", method, target, "id bigint, body text")
        with conn.cursor().copy(f"COPY scratch_real_{name} (id, body) FROM STDIN") as copy:
            for i, b in enumerate(bodies):
                copy.write_row((i, b.replace("\x00", "")))
        size = _one(conn, "SELECT pg_table_size(%s::regclass)", [f"scratch_real_{name}"])
        out[name] = {"over_raw": round(size / raw, 2)}
        print(f"real bodies, {name}: {size / raw:.2f}x raw", file=sys.stderr)
        conn.execute(f"DROP TABLE scratch_real_{name}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="deeprepo_bench_search")
    parser.add_argument("--sample-rollouts", type=int, default=20_000)
    args = parser.parse_args()
    url = db_url(args.database)
    with psycopg.connect(url, autocommit=True) as conn:
        result = {"disk": disk_per_rollout(conn), "seeded": compression_on_seeded(conn, args.sample_rollouts),
                  "real": compression_on_real(conn)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
