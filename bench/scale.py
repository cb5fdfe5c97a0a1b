"""Issue 30 item 5 at one size: a database of N seeded rollouts measured whole, with the benches that exist.

    python bench/scale.py --rollouts 100000 [--reuse] [--requests 20] [--repeat 5] [--ingest-rollouts 2000]
                          [--database NAME]

Database `bench_scale_<N>`, or `--database NAME` (kept for later runs: `--reuse`), filled by
`manage.py seed_scale` (COPY) with the rare texts bench/search.py plants; the search indexer then reads
everything (bench/search.build_index: its rate is the indexer's throughput). Then:
- disk per rollout: tables, indexes, search, blobs (bench/storage.disk_per_rollout), and ÷ raw text;
- search first page p95: words, substring / regex (bench/search.time_queries, the page's selector);
- page p95 over HTTP on a real gunicorn, logged in (bench/pages.py's measure): explorer, run page,
  GRPO health, rollouts list, a trajectory, search (word, substring, regex), compare;
- ingest into this database against an empty one (`<database>_empty`, dropped afterwards), through the
  ingest service, alone and with the indexer running beside it (bench/search.ingest_cost), each in its
  own process. Two runs at once clash on nothing when their sizes or `--database` names differ.
Each phase's seconds and the load average as it ends are in the JSON's `phases`.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import pages, search, storage  # noqa: E402
from bench.common import BASE_URL, ROOT, api_key, db_url, p95, scratch_database, web_server  # noqa: E402

PROJECT = "scale"  # the project seed_scale fills for pages.py and search.py alike
TARGET_PAGE_MS = 200.0


def _ingest(database: str, rollouts: int) -> dict[str, Any]:
    """search.ingest_cost in a process of its own (Django binds one database per process)."""
    out = subprocess.run([sys.executable, __file__, "--ingest-only", "--database", database,
                          "--ingest-rollouts", str(rollouts)], cwd=ROOT, check=True, capture_output=True, text=True,
                         env={**os.environ, "DATABASE_URL": db_url(database)})
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _empty_database(base: str) -> str:
    """`<base>_empty`: named after this run's database, so runs of other sizes or names beside this one
    do not drop it under each other's ingest."""
    name = f"{base}_empty"
    api_key(scratch_database(name), PROJECT)  # its --create makes the project ingest_cost logs into
    return name


def _drop_database(name: str) -> None:
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _page_set(url: str) -> dict[str, tuple[str, dict[str, str] | None]]:
    t = pages.targets(url)
    with psycopg.connect(url) as conn:
        two = [public_id for public_id, _ in pages.train_runs(conn)[:2]]
    every = pages.pages(t)
    keep = ("explorer", "run_page", "grpo_health", "rollouts_list", "trajectory")
    out = {k: every[k] for k in keep if k in every}
    if "rollouts_list" in out:  # the sorts a user clicks, each read from its own index (runs 0016, 0018)
        out["rollouts_by_reward"] = (out["rollouts_list"][0] + "?sort=-reward", None)
        out["rollouts_by_turns"] = (out["rollouts_list"][0] + "?sort=-turns", None)
        out["rollouts_by_tokens"] = (out["rollouts_list"][0] + "?sort=-tokens", None)
    s = f"/p/{PROJECT}/search/"
    out["search_word"] = (f"{s}?q=injection", None)
    out["search_word_rare"] = (f"{s}?q=quota+exceeded", None)
    out["search_substring_rare"] = (f"{s}?q=quota+exceed&mode=substring", None)
    out["search_regex"] = (f"{s}?q=quota+%5Ba-z%5D%2B+after+%5B0-9%5D%2B&mode=regex", None)
    out["compare"] = (f"/p/{PROJECT}/compare/?runs={','.join(two)}", None)
    # A run's error signatures and one run's "where it occurs" chart of a tool filter (a full pass over its
    # rollouts each: they grow with the run, the other pages with the page).
    out["errors"] = (f"/p/{PROJECT}/runs/{two[0]}/errors/", None)
    out["search_chart_tool"] = (f"{s}counts/?run={two[0]}&tool=read_file", None)
    return out


def _pages_p95(url: str, requests: int) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with web_server(url, workers=1, threads=1) as site, httpx.Client(base_url=site, timeout=120,
                                                                      follow_redirects=False) as client:
        pages.login(client)
        for name, (path, headers) in _page_set(url).items():
            m = pages.measure(client, path, requests, headers)
            if m is not None:
                figures[name] = m
                print(f"{name:<24} p50 {m['p50_ms']:8.1f} ms  p95 {m['p95_ms']:8.1f} ms", file=sys.stderr, flush=True)
    return figures


def _blob_bytes(conn: psycopg.Connection[Any]) -> int:
    """Bodies kept in the blob store, by the sizes their rows note (uncompressed: an upper bound)."""
    row = conn.execute(
        "SELECT (SELECT coalesce(sum(content_size), 0) FROM runs_turn WHERE content_blob <> '') "
        "+ (SELECT coalesce(sum(output_size), 0) FROM runs_toolcall WHERE output_blob <> '')").fetchone()
    return int(row[0]) if row else 0


def _phase_end(phases: dict[str, Any], name: str, start: float) -> float:
    """A phase's seconds and the load average (1, 5, 15 min) as it ends: on the shared machine a latency
    means little without the load it was measured under (the 10^6 run's phases saw 1.6 to 13.7)."""
    phases[name] = {"s": round(time.monotonic() - start, 1), "loadavg": [round(x, 2) for x in os.getloadavg()]}
    return time.monotonic()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=100_000)
    parser.add_argument("--reuse", action="store_true", help="keep bench_scale_<N> if it holds N rollouts")
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each search query")
    parser.add_argument("--ingest-rollouts", type=int, default=2000, help="0: skip the ingest comparison")
    parser.add_argument("--ingest-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--database", default=None, help="the scratch database's name (default bench_scale_<N>); "
                                                        "the ingest comparison's empty one is <name>_empty")
    args = parser.parse_args()

    if args.ingest_only:  # the child of _ingest
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
        import django

        django.setup()
        print(json.dumps(search.ingest_cost(args.ingest_rollouts)))
        return

    name = args.database or f"bench_scale_{args.rollouts}"
    search._database_arg(name)  # noqa: SLF001 - search.py's way to name its scratch database
    url = db_url(name)
    phases: dict[str, Any] = {}
    t0 = time.monotonic()
    reused = args.reuse and search._seeded(url, args.rollouts)  # noqa: SLF001
    if not reused:
        url = search.seed(args.rollouts)
    seed_s = None if reused else round(time.monotonic() - t0, 1)
    t = _phase_end(phases, "seed", t0)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    index = search.build_index(url)
    t = _phase_end(phases, "index", t)
    queries = search.time_queries(args.repeat)
    t = _phase_end(phases, "search_queries", t)
    with psycopg.connect(url, autocommit=True) as conn:
        disk = storage.disk_per_rollout(conn)
        blobs = _blob_bytes(conn)
        raw = disk["raw_text_bytes_per_rollout"] * disk["rollouts"]
        total = sum(v for v in disk["table_mb"].values()) * 2**20 + blobs
        rows = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608 - fixed names
                for t in ("runs_rollout", "runs_turn", "runs_toolcall", "search_doc")}
    t = _phase_end(phases, "disk", t)
    page_p95 = _pages_p95(url, args.requests)
    t = _phase_end(phases, "pages", t)
    ingest: dict[str, Any] = {}
    if args.ingest_rollouts:
        ingest["into_this"] = _ingest(name, args.ingest_rollouts)
        empty_db = _empty_database(name)
        try:
            ingest["into_empty"] = _ingest(empty_db, args.ingest_rollouts)
        finally:
            _drop_database(empty_db)
        full, empty = ingest["into_this"]["ingest_rollouts_per_s_alone"], ingest["into_empty"]["ingest_rollouts_per_s_alone"]
        ingest["rate_vs_empty"] = round(full / empty, 3) if empty else None
        _phase_end(phases, "ingest", t)
    # The pages (item 5); search and a run's errors grow with what they read, and are shown apart.
    worst = max((v["p95_ms"] for k, v in page_p95.items() if not k.startswith("search") and k != "errors"),
                default=None)
    result: dict[str, Any] = {
        "bench": "scale", "rollouts": args.rollouts, "database": name, "seed_s": seed_s, "rows": rows,
        "disk": {**disk, "blob_bytes": blobs, "bytes_per_rollout": round(total / max(1, disk["rollouts"])),
                 "all_over_raw": round(total / raw, 2) if raw else None},
        "search": {"word_p95_ms": p95(queries["timings"]["words"]),
                   "substring_regex_p95_ms": p95(queries["timings"]["other"]),
                   "indexer_docs_per_s": round(index["rows"] / max(index["seconds"], 1e-9)),
                   "index_build_s": round(index["seconds"], 1), "queries": queries["queries"]},
        "pages": page_p95,
        "pages_p95_ms": {k: v["p95_ms"] for k, v in page_p95.items()},
        "worst_page_p95_ms": worst,
        "pages_target_met": worst is not None and worst <= TARGET_PAGE_MS,
        "ingest": ingest,
        "phases": phases,
        "cores": os.cpu_count(),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
