"""Ingest throughput through the HTTP API beside the raw COPY rate of the same rows, in one run.

Metric points: 50 keys x 20,000 steps = 1,000,000 points in batches of 1,000.
Rollouts: 20,000, each 8 turns of ~1 KB with 2 tool calls per turn, in batches of 50.
Targets: points >= 30 % of the COPY rate, rollouts >= 25 % of it.
Last line: {"points_per_s", "copy_points_per_s", "rollouts_per_s", "copy_rollouts_per_s", ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import api_key, scratch_database, web_server  # noqa: E402

TEXT = ("The auditor reads the module and notes where user input reaches a query without escaping. " * 12)[:1000]


def metric_batches(keys: int, steps: int, per_batch: int) -> list[bytes]:
    steps_per_batch = max(1, per_batch // keys)
    names = [f"metric/{k:02d}" for k in range(keys)]
    t0 = 1_700_000_000.0
    out = []
    for start in range(0, steps, steps_per_batch):
        points = [{"step": s, "time": t0 + s, "values": {n: random.random() for n in names}}
                  for s in range(start, min(steps, start + steps_per_batch))]
        out.append(json.dumps(points).encode())
    return out


def make_rollout(i: int) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [{"role": "user", "content": TEXT}]
    for t in range(8):
        turns.append({
            "role": "assistant", "content": TEXT, "input_tokens": 900, "output_tokens": 120, "latency": 1.5,
            "tool_calls": [
                {"call_id": f"c{t}a", "name": "read_file", "arguments": {"path": f"src/m{t}.py"}, "output": TEXT[:400]},
                {"call_id": f"c{t}b", "name": "run_code", "arguments": {"code": "print(1)"}, "output": "1"},
            ],
        })
    return {"uid": f"r{i}", "example_key": f"ex-{i % 500}", "step": i // 1000, "sample_index": i % 8,
            "reward": random.random(), "reward_components": {"f1": random.random()}, "input_tokens": 7200,
            "output_tokens": 960, "stop_condition": "answered", "final_answer": "done", "turns": turns}


def send_all(site: str, key: str, path: str, bodies: list[bytes], threads: int) -> float:
    local: dict[int, httpx.Client] = {}

    def send(body: bytes) -> None:
        import threading

        client = local.get(threading.get_ident())
        if client is None:
            client = local[threading.get_ident()] = httpx.Client(
                base_url=site, timeout=300, headers={"Authorization": f"Bearer {key}",
                                                    "Content-Type": "application/json"})
        res = client.post(path, content=body)
        if res.status_code != 200:
            raise RuntimeError(f"{res.status_code}: {res.text[:300]}")

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(send, bodies))
    return time.perf_counter() - start


def copy_points(url: str, keys: int, steps: int) -> float:
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TEMP TABLE m (LIKE runs_metric INCLUDING ALL)")
        start = time.perf_counter()
        with conn.cursor().copy("COPY m (series_id, step, value, time) FROM STDIN") as copy:
            for s in range(steps):
                for k in range(keys):
                    copy.write_row((k, s, random.random(), 1_700_000_000.0 + s))
        conn.commit()
        return time.perf_counter() - start


def copy_rollouts(url: str, n: int) -> float:
    rollouts = [make_rollout(i) for i in range(n)]
    with psycopg.connect(url) as conn:
        for table in ("rollout", "turn", "toolcall"):
            conn.execute(f"CREATE TEMP TABLE {table} (LIKE runs_{table} INCLUDING ALL)")
        start = time.perf_counter()
        cur = conn.cursor()
        turn_id = call_id = 0
        with cur.copy("COPY rollout (id, run_id, uid, example_id, step, sample_index, reward, reward_components, "
                      "num_turns, input_tokens, output_tokens, is_truncated, stop_condition, error, final_answer, "
                      "metrics, created_at) FROM STDIN") as copy:
            for i, r in enumerate(rollouts):
                copy.write_row((i, 1, r["uid"], i % 500, r["step"], r["sample_index"], r["reward"],
                                json.dumps(r["reward_components"]), 8, 7200, 960, False, "answered", "", "done",
                                "{}", "2026-01-01T00:00:00Z"))
        with cur.copy("COPY turn (id, rollout_id, index, role, content, content_blob, content_size, reasoning, "
                      "model, metadata) FROM STDIN") as copy:
            for i, r in enumerate(rollouts):
                for j, t in enumerate(r["turns"]):
                    turn_id += 1
                    copy.write_row((turn_id, i, j, t["role"], t["content"], "", len(t["content"]), "", "", "{}"))
        with cur.copy("COPY toolcall (id, turn_id, rollout_id, index, call_id, name, arguments, output, "
                      "output_blob, output_size, is_error, model) FROM STDIN") as copy:
            for i, r in enumerate(rollouts):
                for t in r["turns"]:
                    for j, c in enumerate(t.get("tool_calls", [])):
                        call_id += 1
                        copy.write_row((call_id, 1, i, j, c["call_id"], c["name"], json.dumps(c["arguments"]),
                                        c["output"], "", len(c["output"]), False, ""))
        conn.commit()
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--rollouts", type=int, default=20_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    random.seed(1)
    url = scratch_database("deeprepo_bench_ingest")
    key = api_key(url, "bench")
    points = args.keys * args.steps
    metric_bodies = metric_batches(args.keys, args.steps, 1000)
    rollout_bodies = [json.dumps([make_rollout(i) for i in range(s, min(args.rollouts, s + 50))]).encode()
                      for s in range(0, args.rollouts, 50)]
    with web_server(url, workers=args.workers) as site:
        headers = {"Authorization": f"Bearer {key}"}
        run_m = httpx.post(f"{site}/api/v1/runs", json={"name": "bench-metrics"}, headers=headers).json()["id"]
        run_r = httpx.post(f"{site}/api/v1/runs", json={"name": "bench-rollouts"}, headers=headers).json()["id"]
        t_points = send_all(site, key, f"/api/v1/runs/{run_m}/metrics", metric_bodies, args.threads)
        print(f"API: {points} points in {t_points:.1f}s", file=sys.stderr)
        t_rollouts = send_all(site, key, f"/api/v1/runs/{run_r}/rollouts", rollout_bodies, args.threads)
        print(f"API: {args.rollouts} rollouts in {t_rollouts:.1f}s", file=sys.stderr)
    t_copy_points = copy_points(url, args.keys, args.steps)
    t_copy_rollouts = copy_rollouts(url, args.rollouts)
    result = {
        "points_per_s": round(points / t_points),
        "copy_points_per_s": round(points / t_copy_points),
        "rollouts_per_s": round(args.rollouts / t_rollouts),
        "copy_rollouts_per_s": round(args.rollouts / t_copy_rollouts),
    }
    result["points_ratio"] = round(result["points_per_s"] / result["copy_points_per_s"], 3)
    result["rollouts_ratio"] = round(result["rollouts_per_s"] / result["copy_rollouts_per_s"], 3)
    result["cores"] = os.cpu_count()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
