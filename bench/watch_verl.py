"""`deeprepo watch` following a verl trainer: CPU the watcher uses while steps arrive.

A stand-in trainer writes rollout_data/{step}.jsonl (1,000 rollouts of ~4 KB, verl 0.9.1's keys)
every --every seconds; `deeprepo watch DIR --interval 5` runs as its own process against a real
server (gunicorn on a scratch database). Measured: the watcher's CPU seconds (user + system, from
/proc) over the wall time, and whether every rollout reached the server. Target: <= 10 % of a core.
Last line: {"watch_cpu_percent": N, ...}.

    python bench/watch_verl.py [--steps 6] [--every 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, api_key, scratch_database, web_server  # noqa: E402
from bench.imports import VERL_PER_STEP, write_verl_step  # noqa: E402

TARGET_PERCENT = 10.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--every", type=float, default=10.0)
    args = ap.parse_args()
    url = scratch_database("bench_watch_verl")
    os.environ["DATABASE_URL"] = url
    subprocess.run([sys.executable, "manage.py", "shell", "-c",
                    "from deeprepo_web.accounts.models import Project; Project.objects.create(slug='bench', name='Bench')"],
                   cwd=ROOT, check=True)
    key = api_key(url, "bench")
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp, web_server(url) as site:
        folder = Path(tmp) / "verl-run" / "rollout_data"
        folder.mkdir(parents=True)
        env = {**os.environ, "DEEPREPO_URL": site, "DEEPREPO_API_KEY": key}
        watcher = subprocess.Popen([sys.executable, "-m", "deeprepo_client.cli", "watch", str(folder.parent),
                                    "--project", "bench", "--interval", "5"], env=env, cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t0 = time.monotonic()
        try:
            for step in range(1, args.steps + 1):
                write_verl_step(folder, step, rng)
                time.sleep(max(0.0, t0 + step * args.every - time.monotonic()))
            time.sleep(8)  # the last step settles (2 s) and goes at the next pass
            cpu = cpu_seconds(watcher.pid)
            wall = time.monotonic() - t0
        finally:
            watcher.terminate()
            output, _ = watcher.communicate(timeout=30)
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c",
                          "from deeprepo_web.runs.models import Rollout; print(Rollout.objects.count())"],
                         cwd=ROOT, check=True, capture_output=True, text=True)
    stored = int(out.stdout.strip().splitlines()[-1])
    expected = args.steps * VERL_PER_STEP
    percent = 100 * cpu / wall
    print(output.strip()[-2000:], file=sys.stderr)
    print(json.dumps({"watch_cpu_percent": round(percent, 1), "target": TARGET_PERCENT,
                      "ok": percent <= TARGET_PERCENT and stored == expected, "cpu_seconds": round(cpu, 2),
                      "wall_seconds": round(wall, 1), "steps": args.steps, "rollouts_stored": stored,
                      "rollouts_written": expected, "every_s": args.every}))


if __name__ == "__main__":
    main()
