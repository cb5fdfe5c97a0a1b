"""The wandb SDK logging the shared workload through this server, against the same script offline.

Workload (../shared/bench/README.md): 50 keys x 20,000 steps = 1,000,000 points, all keys of a step
in one `wandb.log`, in step order. The same script runs twice in a fresh process: with
WANDB_MODE=offline (the SDK writes its local file only), then with WANDB_BASE_URL pointing at a
gunicorn of this project on a scratch database. Its wall time includes wandb.init and
wandb.finish, which waits until the server has acknowledged everything. Target: online within 1.5x
of offline, and every point stored. Last line: {"online_s", "offline_s", "ratio", "points_stored", …}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import api_key, scratch_database, web_server  # noqa: E402

SCRIPT = """
import sys, wandb
keys, steps = int(sys.argv[1]), int(sys.argv[2])
names = [f"train/metric_{k:02d}" for k in range(keys)]
run = wandb.init(project="bench", id="bench0001")
for s in range(steps):
    # The shared workload's values (../shared/bench/benchlib.py metric_value)
    wandb.log({names[k]: ((k * 7919 + s * 104729) % 100003) / 100003.0 + s * 1e-5 for k in range(keys)})
wandb.finish()
"""


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update({"WANDB_DIR": str(tmp), "WANDB_CONFIG_DIR": str(tmp / "cfg"), "WANDB_CACHE_DIR": str(tmp / "cache"),
                "WANDB_DATA_DIR": str(tmp / "data"), "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true",
                "WANDB_DISABLE_CODE": "true", "WANDB__DISABLE_STATS": "true", "WANDB__DISABLE_META": "true",
                "WANDB_CONSOLE": "off", "WANDB_ERROR_REPORTING": "false"})
    env.update(extra)
    return env


def _timed(env: dict[str, str], keys: int, steps: int) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(keys), str(steps)], env=env, capture_output=True,
                          text=True, timeout=3600)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the wandb script failed: {done.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=50)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interval", default="15", help="WANDB__FILE_STREAM_TRANSMIT_INTERVAL (the SDK's default)")
    args = parser.parse_args()
    url = scratch_database("deeprepo_bench_wandb")
    key = api_key(url, "bench")
    with tempfile.TemporaryDirectory(prefix="bench-wandb-") as tmp:
        offline = _timed(_env(Path(tmp) / "off", WANDB_MODE="offline"), args.keys, args.steps)
        print(f"offline: {offline:.1f}s", file=sys.stderr)
        with web_server(url, workers=args.workers) as site:
            env = _env(Path(tmp) / "on", WANDB_BASE_URL=site, WANDB_API_KEY=key,
                       WANDB__FILE_STREAM_TRANSMIT_INTERVAL=args.interval)
            online = _timed(env, args.keys, args.steps)
        print(f"online: {online:.1f}s", file=sys.stderr)
    with psycopg.connect(url) as conn:
        stored = conn.execute("SELECT count(*) FROM runs_metric").fetchone()[0]
        series = conn.execute("SELECT count(*), min(count), max(count) FROM runs_metricseries").fetchone()
    expected = args.keys * args.steps
    print(json.dumps({"online_s": round(online, 2), "offline_s": round(offline, 2),
                      "ratio": round(online / offline, 3), "target_ratio": 1.5,
                      "points_stored": stored, "points_expected": expected, "dropped": expected - stored,
                      "series": series[0], "series_min_count": series[1], "series_max_count": series[2],
                      "points_per_s_online": round(expected / online), "interval_s": args.interval,
                      "cores": os.cpu_count()}))


if __name__ == "__main__":
    main()
