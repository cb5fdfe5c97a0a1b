"""Search speed on seed_scale data: first-page latency of word and substring/regex searches, index
size and build time, and what the search indexes cost ingest.

    python bench/search.py [--rollouts 1000000] [--reuse] [--repeat 5] [--ingest-rollouts 4000]

A scratch database (`deeprepo_bench_search`) is seeded by `manage.py seed_scale`, a few rare texts are
planted (0.02 % of turns, 0.005 % of tool calls), then the indexer (beat's search_index_update) makes
one document per rollout in search_doc: timed, and sized with its indexes (search_doc is one plain table:
the words GIN is an expression over the body, no stored tsvector; a trigram GIN; a btree on run; the
(src, obj, part) key; a database of the layout before search 0004 also has search_doc_rollout). Each query runs `--repeat` times
through the same selector as the page (`search_page`, first page of 50). `--reuse` keeps a database
seeded before at the same size.

Ingest: the same 50-rollout batches (bench/ingest.py's rollouts, ~1 KB turns) through the ingest service,
alone and with the indexer running beside it (ingest itself writes no search index).
Last line: {"word_p95_ms", "substring_regex_p95_ms", "index_mb", "ingest_slowdown", ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import db_url, p95, scratch_database  # noqa: E402

DB = "deeprepo_bench_search"
WORDS = [("injection", "every rollout"), ('"SQL injection"', "phrase, every rollout"),
         ("bcrypt parameterises", "two words, a fifth of turns"), ("quota exceeded", "rare (0.02 % of turns)"),
         ("secret key", "rare, tool output"), ("zebra", "absent")]
SUBSTRINGS = [("substring", "db.py:42", "every rollout"), ("substring", "quota exceed", "rare"),
              ("substring", "/secret.key", "rare, tool output"), ("regex", r"auth\.py:[0-9]+", "every rollout"),
              ("regex", r"quota [a-z]+ after [0-9]+", "rare"), ("substring", "zebra-horse", "absent")]


def _database_arg(name: str) -> None:
    # Several engineers share one Postgres: each bench run can name its own scratch database.
    global DB
    DB = name


def _seeded(url: str, rollouts: int) -> bool:
    try:
        with psycopg.connect(url) as conn:
            n = conn.execute("SELECT count(*) FROM runs_rollout r JOIN runs_run u ON u.id = r.run_id "
                             "WHERE u.name NOT LIKE 'ingest-%'").fetchone()
            return bool(n and n[0] == rollouts)
    except psycopg.Error:
        return False


def seed(rollouts: int) -> str:
    url = scratch_database(DB)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "manage.py", "seed_scale", "--rollouts", str(rollouts), "--project", "scale",
                    "--long-points", "1000"], cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, check=True)
    print(f"seeded {rollouts} rollouts in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    with psycopg.connect(url, autocommit=True) as conn:
        _plant(conn)
    return url


def _plant(conn: psycopg.Connection[Any]) -> None:
    """The rare texts, in the turn documents (runs_turn and runs_toolcall are views over them): after
    the content of every 5000th turn, as the output of every 20000th tool call. A size the document
    notes (`cs`, `os`) is kept, as the rows' size columns were."""
    rows = conn.execute(
        "SELECT rollout_id, doc FROM runs_rolloutturns WHERE rollout_id IN "
        "(SELECT rollout_id FROM runs_turn WHERE id % 5000 = 0 "
        " UNION SELECT rollout_id FROM runs_toolcall WHERE id % 20000 = 0)").fetchall()
    for _, doc in rows:
        for turn in doc:
            if turn["id"] % 5000 == 0:
                turn["c"] = f"{turn.get('c', '')} The sandbox quota exceeded after {turn['id']}"
            for call in turn.get("k", ()):
                if call["id"] % 20000 == 0:
                    call["o"] = f"PermissionError: /work/job-{call['id']}/secret.key"
    with conn.cursor() as cur:
        cur.executemany("UPDATE runs_rolloutturns SET doc = %s WHERE rollout_id = %s",
                        [(Jsonb(doc), rollout_id) for rollout_id, doc in rows])


def build_index(url: str) -> dict[str, Any]:
    """Run the indexer (what beat does after ingest) until it has read everything; time and size it."""
    os.environ["DATABASE_URL"] = url
    import django

    django.setup()
    from django.db import connection

    from deeprepo_web.search.indexer import search_index_update

    t0 = time.monotonic()
    rows = 0
    while added := search_index_update(budget_seconds=600):
        rows += added
        # At 10^6 rollouts this loop runs ~50 minutes: a line per pass shows it moving, and at what rate.
        print(f"indexed {rows} rows so far, {rows / (time.monotonic() - t0):.0f} docs/s", file=sys.stderr, flush=True)
    seconds = time.monotonic() - t0
    with connection.cursor() as cur:
        cur.execute("ANALYZE search_doc")
        sizes = {}
        for rel in ("search_doc", "search_doc_tsv", "search_doc_trgm", "search_doc_rollout", "search_doc_run",
                    "search_doc_pkey", "runs_rolloutturns", "runs_rollout"):
            # search_doc whole (heap, TOAST and every index); each index and each runs table on its own,
            # runs_rolloutturns with its TOAST (a document too big for a page goes there; runs_turn and
            # runs_toolcall are views over it, runs 0020).
            size = ("pg_total_relation_size" if rel == "search_doc" else
                    "pg_table_size" if rel == "runs_rolloutturns" else "pg_relation_size")
            # coalesce: an index one layout has and the other has not (search_doc_rollout before 0004).
            cur.execute(f"SELECT coalesce({size}(to_regclass(%s)), 0)", [rel])
            sizes[rel] = cur.fetchone()[0]
    print(f"indexed {rows} rows in {seconds:.0f}s", file=sys.stderr)
    return {"rows": rows, "seconds": seconds, "bytes": sizes}


def time_queries(repeat: int) -> dict[str, Any]:
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.search.selectors import SearchFailed, search_page, search_scope
    from deeprepo_web.search.spec import spec_parse

    project = Project.objects.get(slug="scale")
    cases = [("words", q, what) for q, what in WORDS] + list(SUBSTRINGS)
    timings: dict[str, list[float]] = {"words": [], "other": []}
    detail = []
    for mode, q, what in cases:
        spec = spec_parse({"q": q, "mode": mode})
        scope = search_scope(project=project, spec=spec)
        samples = []
        found = 0
        failed: list[str] = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            try:
                results, _ = search_page(scope=scope, spec=spec, per_page=50)
                found = len(results)
            except SearchFailed as exc:  # what the page would show; its time counts, and the bench goes on
                failed.append(str(exc))
            samples.append((time.perf_counter() - t0) * 1000)
        timings["words" if mode == "words" else "other"] += samples
        detail.append({"mode": mode, "q": q, "what": what, "results": found, "failed": failed,
                       "p50_ms": round(statistics.median(samples), 1), "max_ms": round(max(samples), 1)})
        print(f"{mode:9} {q!r:32} {what:28} {found:3} results  p50 {statistics.median(samples):7.1f} ms  "
              f"max {max(samples):7.1f} ms" + (f"  FAILED {len(failed)}x: {failed[0]}" if failed else ""),
              file=sys.stderr)
    return {"timings": timings, "queries": detail}


def ingest_cost(rollouts: int) -> dict[str, float]:
    """Rollouts per second through the ingest service alone, and while the indexer keeps up beside it
    (a thread looping search_index_update on its own connection, as the beat task would)."""
    import threading

    from django.db import connection

    from bench.ingest import rollout_records
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search.indexer import search_index_update

    project = Project.objects.get(slug="scale")
    records = rollout_records(rollouts)
    batches = [records[s:s + 50] for s in range(0, rollouts, 50)]
    rates: dict[str, list[float]] = {"alone": [], "indexing": []}
    for rnd in range(2):
        for mode in ("alone", "indexing") if rnd == 0 else ("indexing", "alone"):
            stop = threading.Event()

            def indexer(stop: threading.Event = stop) -> None:
                while not stop.is_set():
                    if not search_index_update(budget_seconds=5):
                        stop.wait(1.0)
                connection.close()

            thread = threading.Thread(target=indexer) if mode == "indexing" else None
            run, _ = run_create(project=project, name=f"ingest-{mode}-{rnd}")
            if thread:
                thread.start()
            t0 = time.monotonic()
            for batch in batches:
                rollouts_ingest(run=run, rollouts=batch)
            rate = rollouts / (time.monotonic() - t0)
            stop.set()
            if thread:
                thread.join()
            rates[mode].append(rate)
            print(f"ingest, {mode}: {rate:.0f} rollouts/s", file=sys.stderr)
    alone, indexing = statistics.median(rates["alone"]), statistics.median(rates["indexing"])
    return {"ingest_rollouts_per_s_alone": round(alone), "ingest_rollouts_per_s_indexing": round(indexing),
            "ingest_slowdown": round(1 - indexing / alone, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="keep the scratch database if seeded at this size")
    parser.add_argument("--ingest-rollouts", type=int, default=4000, help="0: skip the ingest comparison")
    parser.add_argument("--database", default=DB, help="the scratch database's name (dropped and made again)")
    args = parser.parse_args()
    _database_arg(args.database)
    url = db_url(DB)
    if not (args.reuse and _seeded(url, args.rollouts)):
        url = seed(args.rollouts)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    index = build_index(url)
    measured = time_queries(args.repeat)
    with psycopg.connect(url) as conn:
        turns = conn.execute("SELECT count(*) FROM runs_turn").fetchone()
        calls = conn.execute("SELECT count(*) FROM runs_toolcall").fetchone()
    sizes = index["bytes"]
    result: dict[str, Any] = {
        "rollouts": args.rollouts, "turns": turns[0] if turns else 0, "tool_calls": calls[0] if calls else 0,
        "word_p95_ms": p95(measured["timings"]["words"]),
        "substring_regex_p95_ms": p95(measured["timings"]["other"]),
        "index_mb": round(sizes["search_doc"] / 2**20, 1),
        "index_gin_mb": round((sizes["search_doc_tsv"] + sizes["search_doc_trgm"]) / 2**20, 1),
        "runs_tables_mb": round(sum(sizes[t] for t in ("runs_rolloutturns", "runs_rollout")) / 2**20, 1),
        "index_build_s": round(index["seconds"], 1),
        "index_rows_per_s": round(index["rows"] / max(index["seconds"], 1e-9)),
        "queries": measured["queries"], "bytes": sizes, "cores": os.cpu_count(),
    }
    if args.ingest_rollouts:
        result.update(ingest_cost(args.ingest_rollouts))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
