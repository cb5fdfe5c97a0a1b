"""Where a rollout's turns document is stored, in its row or out of line (TOAST), measured (runs 0021).

    python bench/turns_storage.py [--sizes 1500,3000,4500,6500,10000,15000,27000,65000] [--docs 3000]
                                  [--seed-rollouts 0]

Part 1: documents cut to each raw size from the real rollout text in ../shared/samples (every string of
40+ characters in its JSON and JSONL files), shaped like runs/turndoc.py's, are COPYed into one scratch table
per storage setting: the TOAST tuple target of 128 B that runs 0020 set, Postgres's default that runs 0021
restores, and STORAGE MAIN. For each: bytes per document on disk (heap, TOAST, indexes), a read by key, and
a DELETE of half the documents (rolled back).

Part 2 (`--seed-rollouts N`): one database per tuple target, seeded by `manage.py seed_scale` with N rollouts
over two runs; bytes per document, then `--rounds` rounds alternating between the two: the read of 2,000
random rollouts' turns through the runs_turn view, and `EXPLAIN (ANALYZE, BUFFERS)` of the DELETE of the
bigger run's documents (rolled back).

Last line: {"sizes": [{"raw", "compressed", "<setting>": {"bytes", "read_us", "delete_ms"}}],
"seeded": {"<target>": {"seed_s", "docs", "bytes", "toast_bytes", "read_us": [per round], "delete_ms": [per
round], "buffers": {"hit", "read", "dirtied"}}}}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import BASE_URL, TURNS_DOC_SIZE_SQL, db_url, samples_dir, scratch_database  # noqa: E402

DB = "deeprepo_bench_turns_storage"
# name -> (the column's storage, the table's toast_tuple_target; None for Postgres's default)
SETTINGS = {"target_128": ("EXTENDED", 128), "default": ("EXTENDED", None), "main": ("MAIN", 128)}


def _sample_texts() -> list[str]:
    texts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and len(value) >= 40:
            texts.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in samples_dir().rglob("*"):
        if path.suffix not in (".json", ".jsonl") or path.stat().st_size > 5_000_000:
            continue
        text = path.read_text(errors="replace")
        for line in text.splitlines() if path.suffix == ".jsonl" else [text]:
            try:
                walk(json.loads(line))
            except ValueError:
                continue
    return texts


def _document(texts: list[str], size: int, rng: random.Random) -> str:
    """Turns cut from real text until the JSON passes `size` bytes."""
    turns: list[dict[str, Any]] = []
    total = 0
    while total < size:
        text = rng.choice(texts)
        start = rng.randint(0, max(0, len(text) - 200))
        content = text[start:start + rng.randint(100, 1500)]
        turns.append({"id": rng.randint(1, 10**9), "i": len(turns), "r": rng.choice(["user", "assistant", "tool"]),
                      "c": content})
        total += len(content.encode()) + 40
    return json.dumps(turns)


def _table(conn: psycopg.Connection, name: str, storage: str, target: int | None) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    options = f" WITH (toast_tuple_target = {target})" if target else ""
    conn.execute(f"CREATE TABLE {name} (rollout_id bigint PRIMARY KEY, doc json NOT NULL){options}")
    conn.execute(f"ALTER TABLE {name} ALTER COLUMN doc SET COMPRESSION lz4, ALTER COLUMN doc SET STORAGE {storage}")


def by_size(sizes: list[int], docs: int) -> list[dict[str, Any]]:
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{DB}"')
    texts, rng, out = _sample_texts(), random.Random(3), []
    with psycopg.connect(db_url(DB), autocommit=True) as conn:
        for size in sizes:
            batch = [_document(texts, size, rng) for _ in range(docs)]
            row: dict[str, Any] = {"raw": round(sum(len(d.encode()) for d in batch) / docs)}
            for setting, (storage, target) in SETTINGS.items():
                name = f"docs_{setting}"
                _table(conn, name, storage, target)
                with conn.cursor().copy(f"COPY {name} (rollout_id, doc) FROM STDIN") as copy:
                    for i, doc in enumerate(batch):
                        copy.write_row((i, doc))
                conn.execute(f"VACUUM {name}")
                size_on_disk = conn.execute(f"SELECT pg_total_relation_size('{name}')").fetchone()[0]
                row["compressed"] = round(conn.execute(f"SELECT avg(pg_column_size(doc)) FROM {name}").fetchone()[0])
                keys = rng.sample(range(docs), min(500, docs))
                t0 = time.perf_counter()
                for key in keys:
                    conn.execute(f"SELECT length(doc::text) FROM {name} WHERE rollout_id = %s", [key]).fetchone()
                read_us = (time.perf_counter() - t0) / len(keys) * 1e6
                with conn.transaction(force_rollback=True):
                    t0 = time.perf_counter()
                    conn.execute(f"DELETE FROM {name} WHERE rollout_id % 2 = 0")
                    delete_ms = (time.perf_counter() - t0) * 1000
                row[setting] = {"bytes": round(size_on_disk / docs), "read_us": round(read_us),
                             "delete_ms": round(delete_ms, 1)}
            print(row, file=sys.stderr, flush=True)
            out.append(row)
    return out


def _seed(name: str, target: int | None, rollouts: int) -> dict[str, Any]:
    url = scratch_database(f"{DB}_{name}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE runs_rolloutturns " + (f"SET (toast_tuple_target = {target})" if target
                                                         else "RESET (toast_tuple_target)"))
    t0 = time.monotonic()
    subprocess.run([sys.executable, "manage.py", "seed_scale", "--rollouts", str(rollouts), "--runs", "2",
                    "--project", "bench"], cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, check=True,
                   capture_output=True)
    seed_s = time.monotonic() - t0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        total, toast = conn.execute(TURNS_DOC_SIZE_SQL).fetchone()
        n = conn.execute("SELECT count(*) FROM runs_rolloutturns").fetchone()[0]
    return {"url": url, "seed_s": round(seed_s, 1), "docs": n, "bytes": round(total / n), "toast_bytes": toast,
            "read_us": [], "delete_ms": []}


def _measure(url: str, row: dict[str, Any], rng: random.Random) -> None:
    """One round: the turns of 2,000 random rollouts read through the view, the bigger run's documents deleted."""
    with psycopg.connect(url, autocommit=True) as conn:
        lo, hi = conn.execute("SELECT min(rollout_id), max(rollout_id) FROM runs_rolloutturns").fetchone()
        t0 = time.perf_counter()
        for _ in range(2000):
            conn.execute("SELECT count(*) FROM runs_turn WHERE rollout_id = %s", [rng.randint(lo, hi)]).fetchone()
        row["read_us"].append(round((time.perf_counter() - t0) / 2000 * 1e6))
        run = conn.execute("SELECT run_id FROM runs_rollout GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchone()[0]
        with conn.transaction(force_rollback=True):
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) DELETE FROM runs_rolloutturns "
                                "WHERE rollout_id IN (SELECT id FROM runs_rollout WHERE run_id = %s)",
                                [run]).fetchone()[0][0]
    row["delete_ms"].append(round(plan["Execution Time"]))
    row["buffers"] = {k: plan["Plan"][f"Shared {k.title()} Blocks"] for k in ("hit", "read", "dirtied")}


def seeded(rollouts: int, rounds: int) -> dict[str, Any]:
    """Both databases seeded first, then measured in alternation, `rounds` times each."""
    out = {name: _seed(name, target, rollouts) for name, target in (("default", None), ("target_128", 128))}
    rng = random.Random(5)
    for _ in range(rounds):
        for row in out.values():
            _measure(row["url"], row, rng)
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        for name in out:
            admin.execute(f'DROP DATABASE "{DB}_{name}" WITH (FORCE)')
    for row in out.values():
        del row["url"]
        print(row, file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1500,3000,4500,6500,10000,15000,27000,65000")
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--seed-rollouts", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result: dict[str, Any] = {"sizes": by_size([int(s) for s in args.sizes.split(",") if s], args.docs)}
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    if args.seed_rollouts:
        result["seeded"] = seeded(args.seed_rollouts, args.rounds)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
