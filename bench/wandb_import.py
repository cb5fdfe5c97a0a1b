"""W&B import speed: a run of 100,000 steps x 20 keys written by the real `wandb` package (offline),
imported through import_path() into a fresh scratch database. The run is written once and kept in
$TMPDIR/deeprepo-bench-wandb-<steps>x<keys> (writing it takes longer than importing it).
Target: <= 30 s. Last line: {"import_seconds": N, "points": ..., ...}.

    python bench/wandb_import.py [--steps 100000] [--keys 20]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import scratch_database  # noqa: E402

WRITER = """
import math, sys, wandb
steps, keys = int(sys.argv[1]), int(sys.argv[2])
run = wandb.init(project="bench", name=f"bench-{steps}x{keys}", mode="offline")
names = [f"train/metric_{k:02d}" for k in range(keys)]
for step in range(1, steps + 1):
    run.log({n: math.sin(step / 100 + k) for k, n in enumerate(names)}, step=step)
run.finish()
"""


def write_run(steps: int, keys: int) -> Path:
    root = Path(tempfile.gettempdir()) / f"deeprepo-bench-wandb-{steps}x{keys}"
    done = root / "done"
    if not done.exists():
        root.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(root), "WANDB_SILENT": "true"}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", WRITER, str(steps), str(keys)], env=env, check=True)
        print(f"wandb wrote the run in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        done.write_text("ok")
    return next((root / "wandb").glob("offline-run-*"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=20)
    args = parser.parse_args()
    folder = write_run(args.steps, args.keys)
    url = scratch_database("bench_wandb_import")
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.importers.pipeline import import_path
    from deeprepo_web.runs.models import Metric

    project = Project.objects.create(slug="bench", name="Bench")
    t0 = time.perf_counter()
    report = import_path(project=project, path=folder)
    seconds = time.perf_counter() - t0
    points = Metric.objects.count()
    assert not report.problems, report.problems
    expected = args.steps * args.keys
    print(f"{points} points in {seconds:.1f}s", file=sys.stderr)
    print(json.dumps({"import_seconds": round(seconds, 2), "points": points, "expected_points": expected,
                      "log_bytes": sum(p.stat().st_size for p in folder.glob("run-*.wandb")),
                      "target_seconds": 30, "cores": os.cpu_count()}))


if __name__ == "__main__":
    main()
