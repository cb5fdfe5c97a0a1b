"""MLflow logging throughput: the `mlflow` client's log_batch into this server against a real
`mlflow server` whose backend store is a database on the same Postgres, measured in the same run.

One client process per server does what a trainer does: a run, then log_batch calls of 1,000
metrics each (KEYS keys x 1000/KEYS steps), one after the other, through MLFLOW_TRACKING_URI. Both
servers run one worker process on this machine (the client sends one request at a time; and under
load uvicorn's supervisor kills mlflow's extra workers when they miss a health ping). Target: ours >= 10x mlflow's points/s. Every point is
counted in each database afterwards (nothing dropped).
Last line: {"ours_points_per_s", "mlflow_points_per_s", "ratio", "points", ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import BASE_URL, api_key, free_port, scratch_database, web_server  # noqa: E402

KEYS = 10
CLIENT = r"""
import sys, time
import mlflow
from mlflow.entities import Metric
batches, keys = int(sys.argv[1]), int(sys.argv[2])
client = mlflow.MlflowClient()
exp = client.create_experiment(f"bench-{time.time_ns()}")
run_id = client.create_run(exp).info.run_id
per = 1000 // keys
now = int(time.time() * 1000)
work = [[Metric(f"train/metric_{k}", (b * per + s) * 0.001 + k, now, b * per + s) for s in range(per)
         for k in range(keys)] for b in range(batches)]
start = time.perf_counter()
for metrics in work:
    client.log_batch(run_id, metrics=metrics)
elapsed = time.perf_counter() - start
client.set_terminated(run_id)
print(elapsed, run_id)
"""


def _client(uri: str, batches: int, token: str | None = None) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_TRACKING_URI"] = uri
    if token:
        env["MLFLOW_TRACKING_TOKEN"] = token
    out = subprocess.run([sys.executable, "-c", CLIENT, str(batches), str(KEYS)], env=env, check=True,
                         capture_output=True, text=True, timeout=3600)
    elapsed, run_id = out.stdout.split()[-2:]
    return float(elapsed), run_id


def _mlflow_server(db: str, workers: int) -> tuple[subprocess.Popen[bytes], str, Path]:
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{db}"')
    head = BASE_URL.rpartition("/")[0].replace("postgres://", "postgresql+psycopg://", 1)
    root = Path(tempfile.mkdtemp(prefix="mlflow-bench-"))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"{head}/{db}",
         "--default-artifact-root", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)],
        stdout=open(root / "server.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)  # noqa: SIM115
    site = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen(f"{site}/health", timeout=2)
            return proc, site, root
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((root / "server.log").read_text()[-3000:]) from None
            time.sleep(0.5)


def _count(url: str, sql: str, *args: object) -> int:
    with psycopg.connect(url) as conn:
        return int(conn.execute(sql, args).fetchone()[0])  # type: ignore[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=200, help="log_batch calls of 1,000 metrics to us")
    parser.add_argument("--mlflow-batches", type=int, default=20, help="... to mlflow server (it is slower)")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    proc, site, root = _mlflow_server("mlflow_bench", args.workers)
    try:
        _client(site, 2)  # warm up: first requests load the app
        theirs_s, their_run = _client(site, args.mlflow_batches)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)
    head = BASE_URL.rpartition("/")[0]
    their_points = _count(f"{head}/mlflow_bench", "SELECT count(*) FROM metrics WHERE run_uuid = %s", their_run)

    url = scratch_database("deeprepo_bench_mlflow")
    key = api_key(url, "bench")
    with web_server(url, workers=args.workers) as ours:
        _client(ours, 2, key)
        ours_s, our_run = _client(ours, args.batches, key)
    our_points = _count(url, "SELECT count(*) FROM runs_metric m JOIN runs_metricseries s ON s.id = m.series_id "
                             "JOIN runs_run r ON r.id = s.run_id WHERE r.external_id = %s", our_run)
    ours_rate, their_rate = our_points / ours_s, their_points / theirs_s
    print(f"ours: {our_points} points in {ours_s:.2f}s; mlflow server on Postgres: {their_points} points in "
          f"{theirs_s:.2f}s", file=sys.stderr)
    print(json.dumps({"ours_points_per_s": round(ours_rate), "mlflow_points_per_s": round(their_rate),
                      "ratio": round(ours_rate / their_rate, 1), "points": our_points, "mlflow_points": their_points,
                      "expected_points": args.batches * 1000, "expected_mlflow_points": args.mlflow_batches * 1000,
                      "batch": 1000, "workers": args.workers}))


if __name__ == "__main__":
    main()
