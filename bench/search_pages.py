"""The search page over HTTP, two checkouts side by side on one database: a before/after ratio that
the shared machine's load changes less than it changes either figure.

    DATABASE_URL=postgres://.../postgres python bench/search_pages.py --database deeprepo_bench_search \
        --checkouts /work/main . [--requests 20] [--rounds 2]

One gunicorn per checkout (1 worker, 1 thread, as bench/scale.py measures pages), both logged in as
seed_scale's owner; each page is requested from A, then B, then A... (`--requests` each per round),
after three untimed requests. The pages are bench/scale.py's four search pages (a common word, a rare
word, a rare substring, a regex) and, with `--counts`, their lazy counts (the chart). Last line: one
JSON object: p50 / p95 per checkout and page, and B / A.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import pages  # noqa: E402
from bench.common import db_url, p95, web_server  # noqa: E402

SEARCH = "/p/scale/search/"
PAGES = {
    "search_word": "q=injection",
    "search_word_rare": "q=quota+exceeded",
    "search_substring_rare": "q=quota+exceed&mode=substring",
    "search_regex": "q=quota+%5Ba-z%5D%2B+after+%5B0-9%5D%2B&mode=regex",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", required=True, help="a seed_scale database, searched (bench/search.py)")
    parser.add_argument("--checkouts", nargs=2, type=Path, required=True, metavar=("A", "B"))
    parser.add_argument("--requests", type=int, default=20, help="timed requests per page, checkout and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--counts", action="store_true", help="also the lazy counts request of each page")
    args = parser.parse_args()
    url = db_url(args.database)
    paths = {name: f"{SEARCH}?{q}" for name, q in PAGES.items()}
    if args.counts:
        paths |= {f"{name}_counts": f"{SEARCH}counts/?{q}" for name, q in PAGES.items()}
    names = [str(c.resolve()) for c in args.checkouts]
    times: dict[str, dict[str, list[float]]] = {n: {p: [] for p in paths} for n in names}
    with ExitStack() as stack:
        clients = []
        for checkout in args.checkouts:
            site = stack.enter_context(web_server(url, workers=1, threads=1, root=checkout.resolve()))
            client = stack.enter_context(httpx.Client(base_url=site, timeout=120, follow_redirects=False))
            pages.login(client)
            clients.append(client)
        for _ in range(args.rounds):
            for page, path in paths.items():
                for client in clients:
                    for _ in range(3):
                        assert client.get(path).status_code == 200
                for _ in range(args.requests):
                    for name, client in zip(names, clients, strict=True):
                        t0 = time.perf_counter()
                        res = client.get(path)
                        times[name][page].append((time.perf_counter() - t0) * 1000)
                        assert res.status_code == 200
    out: dict[str, Any] = {"database": args.database, "checkouts": names, "pages": {}}
    a, b = names
    for page in paths:
        row = {}
        for label, name in (("a", a), ("b", b)):
            row[label] = {"p50_ms": round(statistics.median(times[name][page]), 1), "p95_ms": p95(times[name][page])}
        row["b_over_a_p50"] = round(row["b"]["p50_ms"] / row["a"]["p50_ms"], 2)
        row["b_over_a_p95"] = round((row["b"]["p95_ms"] or 0) / (row["a"]["p95_ms"] or 1), 2)
        out["pages"][page] = row
        print(f"{page:<28} A p50 {row['a']['p50_ms']:7.1f} p95 {row['a']['p95_ms']:7.1f} | "
              f"B p50 {row['b']['p50_ms']:7.1f} p95 {row['b']['p95_ms']:7.1f} | B/A p50 {row['b_over_a_p50']:.2f} "
              f"p95 {row['b_over_a_p95']:.2f}", file=sys.stderr, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
