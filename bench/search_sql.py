"""Every SQL statement of a search page request, with its time: what a page spends beyond its first query.

    DATABASE_URL=postgres://.../deeprepo_bench_search python bench/search_sql.py [--repeat 3] [--explain]

Requests the project `scale`'s search page (seed_scale's owner, logged in through Django's test
client, no server) for a rare word, a rare substring, a regex and a common word; prints each
statement's time of the last request (the first ones warm the caches), slowest first, and with
`--explain` the EXPLAIN (ANALYZE, BUFFERS) of the slowest three. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PAGES = {
    "rare_word": "q=quota+exceeded",
    "rare_substring": "q=quota+exceed&mode=substring",
    "regex": "q=quota+%5Ba-z%5D%2B+after+%5B0-9%5D%2B&mode=regex",
    "common_word": "q=injection",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--counts", action="store_true", help="the lazy counts request (the chart) instead of the page")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="whose code serves the page (another worktree)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.checkout.resolve()))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="scale-owner"))
    out: dict[str, Any] = {}
    for name, query in PAGES.items():
        log: list[tuple[float, str, Any]] = []

        def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any,
                    log: list[tuple[float, str, Any]] = log) -> Any:
            t0 = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                log.append(((time.perf_counter() - t0) * 1000, sql, params))

        totals = []
        for _ in range(args.repeat):
            log.clear()
            with connection.execute_wrapper(wrapper):
                t0 = time.perf_counter()
                res = client.get(f"/p/scale/search/{'counts/' if args.counts else ''}?{query}")
                totals.append((time.perf_counter() - t0) * 1000)
            assert res.status_code == 200, res.status_code
        sql_ms = sum(t for t, _, _ in log)
        print(f"== {name}: request {totals[-1]:.1f} ms (all: {[round(t) for t in totals]}), "
              f"{len(log)} statements {sql_ms:.1f} ms", file=sys.stderr)
        for t, sql, _ in sorted(log, key=lambda x: -x[0]):
            print(f"  {t:8.1f} ms  {' '.join(sql.split())[:220]}", file=sys.stderr)
        if args.explain:
            for t, sql, params in sorted(log, key=lambda x: -x[0])[:3]:
                if not sql.lstrip().upper().startswith("SELECT"):
                    continue
                with connection.cursor() as cur:
                    cur.execute("SET max_parallel_workers_per_gather = 0")
                    cur.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
                    plan = "\n    ".join(r[0] for r in cur.fetchall())
                print(f"  -- {t:.1f} ms:\n    {plan}", file=sys.stderr)
        out[name] = {"request_ms": [round(t, 1) for t in totals], "statements": len(log), "sql_ms": round(sql_ms, 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
