"""Mixed load: 20 concurrent readers and 4 writers against one gunicorn on 127.0.0.1.

A scratch database seeded by `manage.py seed_scale --rollouts N` (COPY; 1M takes ~5 min), a real
gunicorn started here, one logged-in session shared by the readers (a login per user would trip
the login rate limit) and an API key for the writers. The single-user p95 of every page
(sequential, idle server) pools `--requests` requests before and as many after the loaded phase,
which lasts `--seconds` seconds:

- readers cycle over explorer, run page, series endpoint, rollouts list, trajectory, groups and a
  compare of 2 runs (each reader starts at a different page, arrives at a random moment of the
  first `--think` seconds, and waits `--think` seconds on average between requests);
- writers each own a run (in a project of their own) and alternate metric batches (20 steps x 10
  keys) and rollout batches (8 rollouts of 3 turns) through the API with a key, one batch every
  `--write-interval` seconds, as a trainer does (arriving within the first interval).

Reported: requests/s (reads, writes), p95 per page under load, errors (must be 0), and the p95
ratio under load vs single-user (target <= 2x). Every loop is bounded by the deadline and a
request cap; the server is stopped at the end. Last line: one JSON object.

    python bench/load.py [--rollouts 100000] [--seconds 300] [--readers 20] [--writers 4] [--think 1] [--write-interval 0.5] [--reuse] [--raw FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, api_key, db_url, p95, scratch_database, web_server  # noqa: E402
from bench.pages import SLUG, login, seeded_size, targets, train_runs  # noqa: E402

TARGET_RATIO = 2.0
MAX_REQUESTS_PER_THREAD = 1_000_000  # a hard bound besides the deadline


def seed(size: int, reuse: bool) -> tuple[str, float | None]:
    name = f"bench_load_{size}"
    url = db_url(name)
    if reuse and seeded_size(url) == size:
        return url, None
    url = scratch_database(name)
    start = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "seed_scale", "--rollouts", str(size), "--project", SLUG],
                   cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, check=True)
    return url, time.perf_counter() - start


def second_run(url: str, first: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        others = [public_id for public_id, _ in train_runs(conn) if public_id != first]
    assert others, "seed made a single run"
    return str(others[0])


def read_pages(t: dict[str, Any], other: str) -> dict[str, str]:
    run = f"/p/{SLUG}/runs/{t['run']}/"
    out = {
        "explorer": f"/p/{SLUG}/",
        "run_page": run,
        "series": f"/api/v1/runs/{t['run']}/series?key=reward&buckets=1000",
        "rollouts": run + "rollouts/",
        "groups": run + "groups/",
        "compare": f"/p/{SLUG}/compare/?runs={t['run']},{other}",
    }
    if t["rollout"] is not None:
        out["trajectory"] = f"{run}rollouts/{t['rollout']}/"
    return out


def warm(site: str, cookies: httpx.Cookies, pages: dict[str, str], connections: int) -> None:
    """Every page once on many connections at a time, so that every gunicorn worker has served it.

    The single-user numbers come from one client, one request at a time, i.e. one warm worker at a
    time; without this the first requests of the loaded phase meet cold workers and their start-up
    lands in the p95.
    """
    def one(_: int) -> None:
        with httpx.Client(base_url=site, timeout=120, cookies=cookies) as client:
            for path in pages.values():
                client.get(path)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(connections)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)


def single_user(client: httpx.Client, pages: dict[str, str], n: int, phase: str) -> dict[str, list[float]]:
    """`n` sequential requests per page on the idle server; their times in ms, per page."""
    out: dict[str, list[float]] = {}
    for name, path in pages.items():
        for _ in range(2):  # warm caches and the worker's connection
            res = client.get(path)
            if res.status_code != 200:
                raise RuntimeError(f"{name} {path}: HTTP {res.status_code}: {res.text[:300]}")
        times = out[name] = []
        for _ in range(n):
            start = time.perf_counter()
            res = client.get(path)
            times.append((time.perf_counter() - start) * 1000)
            if res.status_code != 200:
                raise RuntimeError(f"{name} {path}: HTTP {res.status_code}")
        print(f"single  {name:<12} {phase:<6} p50 {statistics.median(times):7.1f} ms  p95 {p95(times):7.1f} ms", flush=True)
    return out


class Tally:
    """One virtual user's requests and errors (each user runs in its own process)."""

    def __init__(self) -> None:
        self.requests: list[tuple[float, str, float]] = []  # (end time, page, ms), as --raw writes them
        self.errors: list[str] = []

    def add(self, name: str, ms: float) -> None:
        self.requests.append((time.time(), name, ms))

    def error(self, text: str) -> None:
        self.errors.append(text)

    def merge(self, other: Tally) -> None:
        self.requests.extend(other.requests)
        self.errors.extend(other.errors)

    def times(self) -> dict[str, list[float]]:
        """Request times in ms, per page."""
        out: dict[str, list[float]] = {}
        for _, name, ms in self.requests:
            out.setdefault(name, []).append(ms)
        return out


def _user(results: Any, seed: int, target: Any, *args: Any) -> None:
    """A virtual user in a process of its own: users in threads of one process measured each other's
    turns at the GIL (one parsing a 70 KB page delays another's clock), not only the server."""
    random.seed(seed)
    tally = Tally()
    try:
        target(*args, tally)
    except Exception as exc:  # noqa: BLE001 - reported as an error of the run, not a crash of the bench
        tally.error(f"{target.__name__} crashed: {type(exc).__name__}: {exc}")
    results.put(tally)


def _arrive(start: float, spread: float) -> None:
    """Wait until this user's arrival: a random moment within `spread` seconds after `start`.

    Users that all fired their first request in the same millisecond (24 processes just forked)
    measured that burst, about a quarter of the slow requests of a 60 s run; people and trainers
    arrive spread out, as a load tool's ramp-up models."""
    time.sleep(max(0.0, start + random.uniform(0, spread) - time.monotonic()))


def reader(site: str, cookies: httpx.Cookies, pages: dict[str, str], offset: int, start: float, deadline: float,
           think: float, tally: Tally) -> None:
    names = list(pages)
    with httpx.Client(base_url=site, timeout=120, cookies=cookies, follow_redirects=False) as client:
        _arrive(start, think)
        for i in range(MAX_REQUESTS_PER_THREAD):
            if time.monotonic() >= deadline:
                return
            name = names[(offset + i) % len(names)]
            _timed(tally, f"GET {name}", name, partial(client.get, pages[name]))
            if think:
                time.sleep(random.uniform(0.5, 1.5) * think)


def _timed(tally: Tally, what: str, name: str, send: Any) -> float:
    """Send one request; a 200 counts its time under `name`, anything else is an error. Returns ms."""
    start = time.perf_counter()
    try:
        res = send()
        ok, detail = res.status_code == 200, f"HTTP {res.status_code}: {res.text[:200]}"
    except httpx.HTTPError as exc:
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    ms = (time.perf_counter() - start) * 1000
    if ok:
        tally.add(name, ms)
    else:
        tally.error(f"{what}: {detail}")
    return ms


def writer(site: str, key: str, index: int, start: float, deadline: float, interval: float, tally: Tally) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=site, timeout=120, headers=headers) as client:
        _arrive(start, interval)
        res = client.post("/api/v1/runs", json={"name": f"load-writer-{index}", "environment": "load"})
        if res.status_code not in (200, 201):
            tally.error(f"create run: HTTP {res.status_code}: {res.text[:200]}")
            return
        run = res.json()["id"]
        step = 0
        for i in range(MAX_REQUESTS_PER_THREAD):
            if time.monotonic() >= deadline:
                return
            if i % 2 == 0:
                points = [{"step": step + s, "values": {f"train/k{k}": random.random() for k in range(10)}}
                          for s in range(20)]
                name, path, body = "write_metrics", f"/api/v1/runs/{run}/metrics", points
                step += 20
            else:
                body = [{"uid": f"w{index}-{i}-{j}", "example_key": f"ex-{(i * 8 + j) % 200}", "step": step,
                         "sample_index": j, "reward": random.random(), "stop_condition": "answered",
                         "final_answer": "done",
                         "turns": [{"role": "user", "content": "Audit the repository."},
                                   {"role": "assistant", "content": "Reading db.py.", "output_tokens": 40,
                                    "tool_calls": [{"call_id": "c0", "name": "read_file",
                                                    "arguments": {"path": "db.py"}, "output": "query = f'...'"}]},
                                   {"role": "assistant", "content": "SQL injection in db.py."}]}
                        for j in range(8)]
                name, path = "write_rollouts", f"/api/v1/runs/{run}/rollouts"
            ms = _timed(tally, f"POST {name}", name, partial(client.post, path, json=body))
            if interval:
                time.sleep(max(0.0, interval - ms / 1000))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=100_000, help="dataset size (1000000 seeds in ~5 min)")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--readers", type=int, default=20)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--think", type=float, default=1.0,
                        help="mean seconds a reader waits between pages (a person reading; 0 = closed loop)")
    parser.add_argument("--write-interval", type=float, default=0.5,
                        help="seconds between a writer's batches (a trainer logging each step; 0 = closed loop)")
    parser.add_argument("--requests", type=int, default=50, help="single-user requests per page")
    parser.add_argument("--workers", type=int, default=8, help="gunicorn workers (as the Procfile)")
    parser.add_argument("--threads", type=int, default=1, help="gunicorn threads per worker (1: sync workers)")
    parser.add_argument("--reuse", action="store_true", help="keep an already seeded bench database of that size")
    parser.add_argument("--raw", help="write every loaded request as [end time, page, ms] to this JSON file")
    args = parser.parse_args()
    random.seed(3)

    url, seed_seconds = seed(args.rollouts, args.reuse)
    t = targets(url)
    pages = read_pages(t, second_run(url, t["run"]))
    # Writers log into a project of their own, so the seeded project keeps its size for --reuse.
    key = api_key(url, "load-writes")
    result: dict[str, Any] = {"rollouts": args.rollouts, "seconds": args.seconds, "readers": args.readers,
                              "writers": args.writers, "think_s": args.think, "write_interval_s": args.write_interval, "cpus": os.cpu_count(),
                              "gunicorn": f"{args.workers}w x {args.threads}t"}
    if seed_seconds is not None:
        result["seed_seconds"] = round(seed_seconds, 1)
    with web_server(url, workers=args.workers, threads=args.threads) as site, \
            httpx.Client(base_url=site, timeout=120, follow_redirects=False) as client:
        login(client)
        warm(site, client.cookies, pages, connections=2 * args.workers * args.threads)
        before = single_user(client, pages, args.requests, "before")
        # The users' processes start (and make their HTTP clients) before the loaded phase begins.
        start = time.monotonic() + 2.0
        deadline = start + args.seconds
        fork = multiprocessing.get_context("fork")
        results: Any = fork.Queue()
        users = [(reader, (site, client.cookies, pages, i, start, deadline, args.think)) for i in range(args.readers)]
        users += [(writer, (site, key, i, start, deadline, args.write_interval)) for i in range(args.writers)]
        procs = [fork.Process(target=_user, args=(results, 3 + n, target, *a))
                 for n, (target, a) in enumerate(users)]
        for proc in procs:
            proc.start()
        tally = Tally()
        stuck = 0
        for _ in procs:
            try:
                tally.merge(results.get(timeout=args.seconds + 300))
            except queue.Empty:
                stuck += 1
        elapsed = time.monotonic() - start
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
        # The single-user figures pool a phase before and one after the load: the machine's speed
        # drifts, and one phase of 50 requests (a second or two) put a page's p95 anywhere from
        # 9.9 to 17.7 ms in two runs whose loaded figures agreed within 1 ms.
        after = single_user(client, pages, args.requests, "after")
        single = {name: {"p50_ms": round(statistics.median(before[name] + after[name]), 1),
                         "p95_ms": p95(before[name] + after[name]),
                         "p95_before_ms": p95(before[name]), "p95_after_ms": p95(after[name])} for name in pages}

    by_page = tally.times()
    reads = sum(len(v) for k, v in by_page.items() if not k.startswith("write"))
    writes = sum(len(v) for k, v in by_page.items() if k.startswith("write"))
    under: dict[str, Any] = {}
    for name in list(pages) + ["write_metrics", "write_rollouts"]:
        times = by_page.get(name, [])
        entry: dict[str, Any] = {"n": len(times), "p50_ms": round(statistics.median(times), 1) if times else None,
                                 "p95_ms": p95(times)}
        base = single.get(name, {}).get("p95_ms")
        if base and entry["p95_ms"] is not None:
            entry["ratio"] = round(entry["p95_ms"] / base, 2)
        under[name] = entry
        ratio = f"  x{entry['ratio']:.2f}" if "ratio" in entry else ""
        print(f"load    {name:<14} n {entry['n']:6d}  p95 {entry['p95_ms'] or 0:8.1f} ms{ratio}", flush=True)
    for line in tally.errors[:10]:
        print(f"error   {line}", flush=True)
    worst = max((v["ratio"] for v in under.values() if "ratio" in v), default=None)
    result.update({
        "elapsed_s": round(elapsed, 1),
        "throughput_rps": round((reads + writes) / elapsed, 1),
        "read_rps": round(reads / elapsed, 1),
        "write_rps": round(writes / elapsed, 1),
        "written_rollouts": len(by_page.get("write_rollouts", [])) * 8,
        "written_metric_points": len(by_page.get("write_metrics", [])) * 200,
        "errors": len(tally.errors) + stuck,
        "single_user": single,
        "under_load": under,
        "worst_p95_ratio": worst,
        "ratio_target_met": worst is not None and worst <= TARGET_RATIO,
    })
    if args.raw:
        Path(args.raw).write_text(json.dumps(tally.requests))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
