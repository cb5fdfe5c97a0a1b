"""Search speed on seed_scale data: first-page latency of word and substring/regex searches, the size
of the search indexes, and ingest's rate with them.

    python bench/search.py [--rollouts 1000000] [--reuse] [--repeat 5] [--ingest-rollouts 4000]

A scratch database (`deeprepo_bench_search`) is seeded by `manage.py seed_scale`, a few rare texts are
planted (0.02 % of turns, 0.005 % of tool calls). The search indexes are expression indexes on the
source tables (search migration 0002), kept up by the seeding's COPY itself: there is no copy to
build. They are sized. Each query runs `--repeat` times through the same selector as the page
(`search_page`, first page of 50). `--reuse` keeps a database seeded before at the same size.

Ingest: the same 50-rollout batches (bench/ingest.py's rollouts, ~1 KB turns) through the ingest service,
which now keeps the search indexes up as it writes.
Last line: {"word_p95_ms", "substring_regex_p95_ms", "index_mb", "ingest_rollouts_per_s", ...}.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import BASE_URL, scratch_database  # noqa: E402

DB = "deeprepo_bench_search"
WORDS = [("injection", "every rollout"), ('"SQL injection"', "phrase, every rollout"),
         ("bcrypt parameterises", "two words, a fifth of turns"), ("quota exceeded", "rare (0.02 % of turns)"),
         ("secret key", "rare, tool output"), ("zebra", "absent")]
SUBSTRINGS = [("substring", "db.py:42", "every rollout"), ("substring", "quota exceed", "rare"),
              ("substring", "/secret.key", "rare, tool output"), ("regex", r"auth\.py:[0-9]+", "every rollout"),
              ("regex", r"quota [a-z]+ after [0-9]+", "rare"), ("substring", "zebra-horse", "absent")]


def _db_url() -> str:
    head, _, _ = BASE_URL.rpartition("/")
    return f"{head}/{DB}"


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
        conn.execute("UPDATE runs_turn SET content = content || ' The sandbox quota exceeded after ' || id "
                     "WHERE id % 5000 = 0")
        conn.execute("UPDATE runs_toolcall SET output = 'PermissionError: /work/job-' || id || '/secret.key' "
                     "WHERE id % 20000 = 0")
    return url


INDEXES = [f"{t}_search_{k}" for t in ("runs_turn", "runs_toolcall", "runs_rollout", "runs_example")
           for k in ("tsv", "trgm")]


def size_indexes(url: str) -> dict[str, int]:
    """Bytes of each search index and of the source tables (heap + TOAST + every index)."""
    os.environ["DATABASE_URL"] = url
    import django

    django.setup()
    from django.db import connection

    sizes = {}
    with connection.cursor() as cur:
        for table in ("runs_turn", "runs_toolcall", "runs_rollout", "runs_example"):
            cur.execute(f"ANALYZE {table}")
            cur.execute("SELECT pg_total_relation_size(%s::regclass)", [table])
            sizes[table] = cur.fetchone()[0]
        for rel in INDEXES:
            cur.execute("SELECT coalesce(pg_relation_size(to_regclass(%s)), 0)", [rel])
            sizes[rel] = cur.fetchone()[0]
    return sizes


def time_queries(repeat: int) -> dict[str, Any]:
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.search.selectors import search_page, search_scope
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
        for _ in range(repeat):
            t0 = time.perf_counter()
            results, _ = search_page(scope=scope, spec=spec, per_page=50)
            samples.append((time.perf_counter() - t0) * 1000)
            found = len(results)
        timings["words" if mode == "words" else "other"] += samples
        detail.append({"mode": mode, "q": q, "what": what, "results": found,
                       "p50_ms": round(statistics.median(samples), 1), "max_ms": round(max(samples), 1)})
        print(f"{mode:9} {q!r:32} {what:28} {found:3} results  p50 {statistics.median(samples):7.1f} ms  "
              f"max {max(samples):7.1f} ms", file=sys.stderr)
    return {"timings": timings, "queries": detail}


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)


def ingest_rate(rollouts: int) -> dict[str, float]:
    """Rollouts per second through the ingest service (which keeps the search indexes up), twice."""
    from bench.ingest import rollout_records
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    project = Project.objects.get(slug="scale")
    records = rollout_records(rollouts)
    batches = [records[s:s + 50] for s in range(0, rollouts, 50)]
    rates = []
    for rnd in range(2):
        run, _ = run_create(project=project, name=f"ingest-{rnd}")
        t0 = time.monotonic()
        for batch in batches:
            rollouts_ingest(run=run, rollouts=batch)
        rates.append(rollouts / (time.monotonic() - t0))
        print(f"ingest: {rates[-1]:.0f} rollouts/s", file=sys.stderr)
    return {"ingest_rollouts_per_s": round(statistics.median(rates))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="keep the scratch database if seeded at this size")
    parser.add_argument("--ingest-rollouts", type=int, default=4000, help="0: skip the ingest rate")
    parser.add_argument("--database", default=DB, help="the scratch database's name (dropped and made again)")
    args = parser.parse_args()
    _database_arg(args.database)
    url = _db_url()
    if not (args.reuse and _seeded(url, args.rollouts)):
        url = seed(args.rollouts)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    sizes = size_indexes(url)
    measured = time_queries(args.repeat)
    with psycopg.connect(url) as conn:
        turns = conn.execute("SELECT count(*) FROM runs_turn").fetchone()
        calls = conn.execute("SELECT count(*) FROM runs_toolcall").fetchone()
    result: dict[str, Any] = {
        "rollouts": args.rollouts, "turns": turns[0] if turns else 0, "tool_calls": calls[0] if calls else 0,
        "word_p95_ms": p95(measured["timings"]["words"]),
        "substring_regex_p95_ms": p95(measured["timings"]["other"]),
        "index_mb": round(sum(sizes[i] for i in INDEXES) / 2**20, 1),
        "runs_tables_mb": round(sum(sizes[t] for t in ("runs_turn", "runs_toolcall", "runs_rollout")) / 2**20, 1),
        "queries": measured["queries"], "bytes": sizes, "cores": os.cpu_count(),
    }
    if args.ingest_rollouts:
        result.update(ingest_rate(args.ingest_rollouts))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
