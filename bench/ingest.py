"""Ingest through deeprepo_client and the raw HTTP batch endpoint, beside Postgres COPY of the same rows.

All in one run on one server, so the ratios hold on a busy machine. The workload is the shared
one (../shared/bench): 1,000,000 metric points = 50 keys x 20,000 steps logged in training-loop
order, and 20,000 rollouts x 8 turns of ~1 KB (assistant turns with one tool call), logged 64 per
log_rollouts call. Also reports the client's CPU seconds (this process: the training process)
per 1,000,000 points and per 10,000 rollouts, how busy the machine was, and where a logged rollout's
CPU goes (`rollout_cpu_us`: the client, the web workers, the Postgres backends; from /proc).

Targets: client points >= 30 % of COPY, rollouts >= 25 %, raw HTTP points >= 50 %, client CPU
<= 2 s per 1,000,000 points. Last line: one JSON object.

    uv run python bench/ingest.py [--scale 0.1]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import api_key, scratch_database, web_server  # noqa: E402

KEYS = 50
T0 = 1.7e9


# ------------------------------------------------------------------ the workload


def step_values(keys: int, steps: int) -> list[dict[str, float]]:
    names = [f"train/metric_{k:02d}" for k in range(keys)]
    # A deterministic, non-constant signal, so min/max buckets mean something.
    return [{n: ((k * 7919 + s * 104729) % 100003) / 100003.0 + s * 1e-5 for k, n in enumerate(names)}
            for s in range(steps)]


def contents(n: int = 64, size: int = 1024) -> list[str]:
    rnd = random.Random(1234)
    words = ["the", "agent", "calls", "tool", "grep", "patch", "test", "passed", "failed", "Traceback"]
    out = []
    for _ in range(n):
        text = ""
        while len(text) < size:
            text += f"{rnd.choice(words)}{rnd.randint(0, 9999)} "
        out.append(text[:size])
    return out


def rollout_records(n: int, turns: int = 8) -> list[dict[str, Any]]:
    texts = contents()
    out = []
    for i in range(n):
        tl: list[dict[str, Any]] = []
        for t in range(turns):
            role = "user" if t == 0 else ("assistant" if t % 2 == 1 else "tool")
            turn: dict[str, Any] = {"role": role, "content": texts[(i * turns + t) % len(texts)]}
            if role == "assistant":
                turn["tool_calls"] = [{"name": "bash", "arguments": {"cmd": f"pytest -k t{t}"}}]
            tl.append(turn)
        reward = ((i * 2654435761) % 1000) / 1000.0
        out.append({"example_key": f"ex-{(i % 64) // 8}", "step": i // 64, "sample_index": i % 8,
                    "reward": reward, "reward_components": {"correct": reward, "format": 1.0},
                    "num_turns": turns, "output_tokens": 900 + i % 300, "turns": tl})
    return out


# ------------------------------------------------------------------ the machine


def _cpu_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]


class Busy:
    """System-wide CPU busy % over a load (every process: the other engineers' too)."""

    def __init__(self) -> None:
        self.t = _cpu_ticks()

    def pct(self) -> float:
        t, i = _cpu_ticks()
        return round(100.0 * (1 - (i - self.t[1]) / max(1, t - self.t[0])), 1)


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServerCpu:
    """CPU seconds of the web server's workers and of the database's Postgres backends over a load, from
    /proc. Where a rollout's CPU goes (client, web, Postgres) is what a busy machine changes least: the
    wall time there measures the neighbours too."""

    def __init__(self, site: str, url: str) -> None:
        self.url = url
        port = site.rsplit(":", 1)[1]
        master = subprocess.run(["pgrep", "-f", f"gunicorn deeprepo_web.wsgi -b 127.0.0.1:{port}"],
                                capture_output=True, text=True).stdout.split()
        self.master = int(master[0])

    def _workers(self) -> list[int]:
        out = subprocess.run(["pgrep", "-P", str(self.master)], capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]

    def _backends(self) -> list[int]:
        with psycopg.connect(self.url) as conn:
            rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchall()
        return [r[0] for r in rows]

    def __enter__(self) -> ServerCpu:
        self.web0 = {p: _proc_cpu_s(p) for p in self._workers()}
        self.pg0 = {p: _proc_cpu_s(p) for p in self._backends()}
        self.out: dict[str, float] = {}
        return self

    def __exit__(self, *exc: Any) -> None:
        # Backends opened during the load count whole (the web workers keep their connections).
        web = {p: _proc_cpu_s(p) for p in {*self.web0, *self._workers()}}
        pg = {p: _proc_cpu_s(p) for p in {*self.pg0, *self._backends()}}
        self.out = {"web_cpu_s": round(sum(web[p] - self.web0.get(p, 0.0) for p in web), 3),
                    "postgres_cpu_s": round(sum(pg[p] - self.pg0.get(p, 0.0) for p in pg), 3)}


def measure(fn: Any, server: ServerCpu | None = None) -> dict[str, Any]:
    busy = Busy()
    cpu, wall = time.process_time(), time.perf_counter()
    with server or contextlib.nullcontext():
        out = fn()
    res = {"wall_s": round(time.perf_counter() - wall, 3), "client_cpu_s": round(time.process_time() - cpu, 3),
           "busy_pct": busy.pct(), "loadavg_1m": round(os.getloadavg()[0], 2), "out": out}
    if server is not None:
        res.update(server.out)
    return res


# ------------------------------------------------------------------ COPY, the limit


def copy_points(url: str, values: list[dict[str, float]]) -> dict[str, Any]:
    rows = [(k, s, v, T0 + s) for s, vals in enumerate(values) for k, v in enumerate(vals.values())]
    with psycopg.connect(url) as conn:
        conn.execute("DROP TABLE IF EXISTS copy_metric")
        conn.execute("CREATE TABLE copy_metric (LIKE runs_metric INCLUDING ALL)")
        conn.commit()

        def load() -> None:
            with conn.cursor().copy("COPY copy_metric (series_id, step, value, time) FROM STDIN (FORMAT BINARY)") as cp:
                cp.set_types(["int8", "int8", "float8", "float8"])
                for row in rows:
                    cp.write_row(row)
            conn.commit()

        return measure(load)


def copy_rollouts(url: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        for t in ("rollout", "turn", "toolcall"):
            conn.execute(f"DROP TABLE IF EXISTS copy_{t}")
            conn.execute(f"CREATE TABLE copy_{t} (LIKE runs_{t} INCLUDING ALL)")
        conn.commit()

        def load() -> None:
            cur = conn.cursor()
            with cur.copy("COPY copy_rollout (id, run_id, uid, example_id, step, sample_index, reward, "
                          "reward_components, num_turns, output_tokens, is_truncated, stop_condition, error, "
                          "final_answer, metrics, created_at) FROM STDIN") as cp:
                for i, r in enumerate(records):
                    cp.write_row((i, 1, f"u{i}", 1, r["step"], r["sample_index"], r["reward"],
                                  json.dumps(r["reward_components"]), r["num_turns"], r["output_tokens"], False,
                                  "", "", "", "{}", "2026-01-01T00:00:00Z"))
            turn_id = call_id = 0
            with cur.copy("COPY copy_turn (id, rollout_id, index, role, content, content_blob, content_size, "
                          "reasoning, model, metadata) FROM STDIN") as cp:
                for i, r in enumerate(records):
                    for j, t in enumerate(r["turns"]):
                        turn_id += 1
                        cp.write_row((turn_id, i, j, t["role"], t["content"], "", len(t["content"]), "", "", "{}"))
            with cur.copy("COPY copy_toolcall (id, turn_id, rollout_id, index, call_id, name, arguments, output, "
                          "output_blob, output_size, is_error, model) FROM STDIN") as cp:
                for i, r in enumerate(records):
                    for t in r["turns"]:
                        for j, c in enumerate(t.get("tool_calls", [])):
                            call_id += 1
                            cp.write_row((call_id, 1, i, j, "", c["name"], json.dumps(c["arguments"]), "", "", 0,
                                          False, ""))
            conn.commit()

        return measure(load)


# ------------------------------------------------------------------ through the client and raw HTTP


def _through_client(site: str, key: str, name: str, log: Callable[[Any], None], spool: str,
                    server: ServerCpu | None = None) -> dict[str, Any]:
    """Time `log(run)` and the finish() after it, for a run logged through the client as a trainer does."""
    import deeprepo_client

    run = deeprepo_client.init(name=name, url=site, api_key=key, spool_dir=spool)

    def load() -> dict[str, Any]:
        log(run)
        logged = time.perf_counter()
        summary = run.finish()
        return {"finish_s": round(time.perf_counter() - logged, 3), "summary": dict(summary)}

    out = measure(load, server)
    out["run_id"] = run.id
    return out


def client_points(site: str, key: str, values: list[dict[str, float]], spool: str) -> dict[str, Any]:
    def log(run: Any) -> None:
        for s, vals in enumerate(values):
            run.log(vals, step=s, time_=T0 + s)

    return _through_client(site, key, "bench-client-points", log, spool)


def client_rollouts(site: str, key: str, records: list[dict[str, Any]], spool: str, url: str) -> dict[str, Any]:
    def log(run: Any) -> None:
        for i in range(0, len(records), 64):
            run.log_rollouts(records[i : i + 64])

    return _through_client(site, key, "bench-client-rollouts", log, spool, ServerCpu(site, url))


def raw_points(site: str, key: str, values: list[dict[str, float]], body_bytes: int) -> dict[str, Any]:
    """Pre-encoded bodies of whole steps up to body_bytes, one synchronous client (the issue's figure)."""
    frags = [json.dumps({"step": s, "time": T0 + s, "values": v}).encode() for s, v in enumerate(values)]
    bodies, cur, size = [], [], 2
    for f in frags:
        if cur and size + len(f) + 1 > body_bytes:
            bodies.append(b"[" + b",".join(cur) + b"]")
            cur, size = [], 2
        cur.append(f)
        size += len(f) + 1
    bodies.append(b"[" + b",".join(cur) + b"]")
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    with httpx.Client(base_url=site, headers=headers, timeout=600) as api:
        run_id = api.post("/api/v1/runs", json={"name": "bench-raw-points"}).json()["id"]

        def load() -> int:
            stored = 0
            for body in bodies:
                res = api.post(f"/api/v1/runs/{run_id}/metrics", content=body)
                res.raise_for_status()
                stored += res.json()["stored"]
            return stored

        out = measure(load)
    out.update(run_id=run_id, requests=len(bodies))
    return out


def stored_counts(url: str, public_id: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rid = conn.execute("SELECT id FROM runs_run WHERE public_id = %s", [public_id]).fetchone()[0]  # type: ignore[index]
        q = {"points": "SELECT coalesce(sum(count), 0) FROM runs_metricseries WHERE run_id = %s",
             "metric_rows": "SELECT count(*) FROM runs_metric m JOIN runs_metricseries s ON s.id = m.series_id "
                            "WHERE s.run_id = %s",
             "rollouts": "SELECT count(*) FROM runs_rollout WHERE run_id = %s",
             "turns": "SELECT count(*) FROM runs_turn t JOIN runs_rollout r ON r.id = t.rollout_id WHERE r.run_id = %s",
             "tool_calls": "SELECT count(*) FROM runs_toolcall WHERE rollout_id IN "
                           "(SELECT id FROM runs_rollout WHERE run_id = %s)"}
        return {k: int(conn.execute(sql, [rid]).fetchone()[0]) for k, sql in q.items()}  # type: ignore[index]


def idle_cpu(site: str, key: str, spool: str, seconds: float) -> dict[str, Any]:
    """A client with everything acknowledged, idle: its CPU seconds and bytes read over `seconds`."""
    import deeprepo_client

    run = deeprepo_client.init(name="bench-idle", url=site, api_key=key, spool_dir=spool)
    for s in range(2000):
        run.log({"x": float(s)}, step=s)
    run._flush_points()
    while run.spool.pending():
        time.sleep(0.05)

    def rchar() -> int:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("rchar"))

    cpu, read = time.process_time(), rchar()
    time.sleep(seconds)
    out = {"seconds": seconds, "cpu_s": round(time.process_time() - cpu, 4), "bytes_read": rchar() - read}
    run.finish()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0, help="steps and rollouts x this (0.05: a smoke run)")
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--raw-body-bytes", type=int, default=30 * 1024 * 1024)
    args = parser.parse_args()
    steps, n_rollouts = max(20, round(20_000 * args.scale)), max(64, round(20_000 * args.scale))
    n_points = KEYS * steps
    url = scratch_database("deeprepo_bench_ingest")
    key = api_key(url, "bench")
    values = step_values(KEYS, steps)
    records = rollout_records(n_rollouts)
    spool = tempfile.mkdtemp(prefix="deeprepo-bench-spool-")
    res: dict[str, Any] = {"points": n_points, "rollouts": n_rollouts, "cores": os.cpu_count()}
    try:
        # COPY runs before and after the loads it is compared with: the machine is shared, and
        # the mean of the two is the fairest limit for what ran in between.
        res["copy_points"] = copy_points(url, values)
        print(f"COPY points: {res['copy_points']['wall_s']} s", file=sys.stderr)
        with web_server(url, workers=args.workers, threads=1) as site:
            res["client_points"] = client_points(site, key, values, spool)
            print(f"client points: {res['client_points']['wall_s']} s", file=sys.stderr)
            res["raw_points"] = raw_points(site, key, values, args.raw_body_bytes)
            print(f"raw HTTP points: {res['raw_points']['wall_s']} s", file=sys.stderr)
            res["copy_points_after"] = copy_points(url, values)
            print(f"COPY points again: {res['copy_points_after']['wall_s']} s", file=sys.stderr)
            res["copy_rollouts"] = copy_rollouts(url, records)
            print(f"COPY rollouts: {res['copy_rollouts']['wall_s']} s", file=sys.stderr)
            res["client_rollouts"] = client_rollouts(site, key, records, spool, url)
            print(f"client rollouts: {res['client_rollouts']['wall_s']} s", file=sys.stderr)
            res["copy_rollouts_after"] = copy_rollouts(url, records)
            print(f"COPY rollouts again: {res['copy_rollouts_after']['wall_s']} s", file=sys.stderr)
            res["idle"] = idle_cpu(site, key, spool, 5.0)
        for name in ("client_points", "raw_points", "client_rollouts"):
            res[name]["stored"] = stored_counts(url, res[name]["run_id"])
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    print(json.dumps(res, default=str), file=sys.stderr)
    print(json.dumps(summary(res, n_points, n_rollouts)))


def summary(res: dict[str, Any], n_points: int, n_rollouts: int) -> dict[str, Any]:
    rate = lambda n, load: round(n / res[load]["wall_s"])  # noqa: E731
    copy_p = round((rate(n_points, "copy_points") + rate(n_points, "copy_points_after")) / 2)
    copy_r = round((rate(n_rollouts, "copy_rollouts") + rate(n_rollouts, "copy_rollouts_after")) / 2)
    cp, rp, cr = res["client_points"], res["raw_points"], res["client_rollouts"]
    verified = (cp["stored"]["metric_rows"] == n_points and cp["stored"]["points"] == n_points
                and rp["stored"]["metric_rows"] == n_points and cr["stored"]["rollouts"] == n_rollouts
                and cr["stored"]["turns"] == n_rollouts * 8 and cr["stored"]["tool_calls"] == n_rollouts * 4
                and bool(cp["out"]["summary"]["ok"]) and bool(cr["out"]["summary"]["ok"]))
    out = {
        "copy_points_per_s": copy_p,
        "copy_points_per_s_before_after": [rate(n_points, "copy_points"), rate(n_points, "copy_points_after")],
        "copy_rollouts_per_s_before_after": [rate(n_rollouts, "copy_rollouts"),
                                             rate(n_rollouts, "copy_rollouts_after")],
        "client_points_per_s": rate(n_points, "client_points"),
        "raw_http_points_per_s": rate(n_points, "raw_points"),
        "copy_rollouts_per_s": copy_r, "client_rollouts_per_s": rate(n_rollouts, "client_rollouts"),
        "client_points_ratio": round(n_points / cp["wall_s"] / copy_p, 3),
        "raw_http_points_ratio": round(n_points / rp["wall_s"] / copy_p, 3),
        "client_rollouts_ratio": round(n_rollouts / cr["wall_s"] / copy_r, 3),
        "client_cpu_s_per_1m_points": round(cp["client_cpu_s"] * 1e6 / n_points, 2),
        "client_cpu_s_per_10k_rollouts": round(cr["client_cpu_s"] * 1e4 / n_rollouts, 2),
        # Where a rollout's CPU goes: the training process, the web workers, Postgres (/proc, see ServerCpu).
        "rollout_cpu_us": {"client": round(cr["client_cpu_s"] * 1e6 / n_rollouts, 1),
                           "web": round(cr["web_cpu_s"] * 1e6 / n_rollouts, 1),
                           "postgres": round(cr["postgres_cpu_s"] * 1e6 / n_rollouts, 1)},
        "client_finish_wait_s": {"points": cp["out"]["finish_s"], "rollouts": cr["out"]["finish_s"]},
        "idle_client": res["idle"],
        "raw_http_requests": rp["requests"],
        "machine_busy_pct": {k: res[k]["busy_pct"] for k in ("copy_points", "client_points", "raw_points",
                                                             "copy_points_after", "copy_rollouts",
                                                             "client_rollouts", "copy_rollouts_after")},
        "loadavg_1m": {k: res[k]["loadavg_1m"] for k in ("copy_points", "client_points", "client_rollouts")},
        "verified": verified, "points": n_points, "rollouts": n_rollouts, "cores": res["cores"],
    }
    return out


if __name__ == "__main__":
    main()
