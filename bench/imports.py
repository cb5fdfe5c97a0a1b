"""Full import throughput: a ~100 MB verifiers results.jsonl into Postgres through import_path().

Generates the file with bench/parse_formats.py's realistic rows (8 assistant turns with tool calls,
tool outputs, reward components, timing), imports it into a fresh scratch database (parse + every
rollout, turn and tool call stored), then imports it again (nothing new may be stored).
`--format verl` writes a verl rollout_data folder instead: 8 step files of 1,000 rollouts of ~4 KB
(verl 0.9.1's keys, groups of 8 identical prompts), so groups are rebuilt and advantages computed.
Target: >= 2,000 rollouts/s. Last line: {"import_rollouts_per_s": N, ...}.

    python bench/imports.py [MB] [--format verifiers|verl]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import scratch_database  # noqa: E402

TARGET_RATE = 2000
VERL_STEPS, VERL_PER_STEP, VERL_GROUP = 8, 1000, 8


def write_verl_step(folder: Path, step: int, rng: random.Random) -> tuple[int, int]:
    """One {step}.jsonl as RayPPOTrainer._dump_generations writes it: (rows, bytes)."""
    words = ["the", "answer", "so", "we", "add", "multiply", "then", "step", "therefore", "clips", "total", "is"]
    written = 0
    with open(folder / f"{step}.jsonl", "w") as f:
        for i in range(VERL_PER_STEP):
            q = (step * VERL_PER_STEP + i) // VERL_GROUP
            answer = rng.randint(0, 99)
            text = " ".join(rng.choice(words) for _ in range(700))
            line = json.dumps({
                "input": f"system\nYou are a helpful assistant.\nuser\nQuestion {q}: compute it and answer "
                         f"after ####.\nassistant\n",
                "output": f"{text}\n#### {answer}", "gts": str(q % 100), "score": float(answer == q % 100),
                "step": step, "acc": answer == q % 100, "pred": str(answer),
                "request_id": f"{step:04d}-{i:06d}-{rng.getrandbits(32):08x}",
            }, ensure_ascii=False) + "\n"
            f.write(line)
            written += len(line)
        f.flush()
        os.fsync(f.fileno())
    return VERL_PER_STEP, written


def write_verl(folder: Path, rng: random.Random) -> tuple[int, int]:
    """A verl rollout_data folder of VERL_STEPS step files."""
    rows = written = 0
    for step in range(1, VERL_STEPS + 1):
        n, b = write_verl_step(folder, step, rng)
        rows, written = rows + n, written + b
    return rows, written


def write_verifiers(folder: Path, rng: random.Random, target_bytes: int) -> tuple[int, int]:
    from bench.parse_formats import make_row  # it reads sys.argv when imported: only for this format

    path = folder / "results.jsonl"
    written = rows = 0
    with open(path, "w") as f:
        while written < target_bytes:
            line = make_row(rows, rng) + "\n"
            f.write(line)
            written += len(line)
            rows += 1
        # On disk before the clock starts: otherwise the kernel writes this file back while the
        # import runs, and the import pays for the benchmark's own setup.
        f.flush()
        os.fsync(f.fileno())
    (folder / "metadata.json").write_text(json.dumps({"env_id": "bench", "model": "m", "num_examples": rows // 4}))
    return rows, written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mb", nargs="?", type=float, default=100.0, help="verifiers file size in MB (default 100)")
    parser.add_argument("--format", choices=("verifiers", "verl"), default="verifiers")
    args = parser.parse_args()
    fmt = args.format
    url = scratch_database("bench_imports" if fmt == "verifiers" else f"bench_imports_{fmt}")
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from django.db import connection

    from deeprepo_web.accounts.models import Project
    from deeprepo_web.importers.pipeline import import_path
    from deeprepo_web.runs.models import Rollout, ToolCall, Turn

    project = Project.objects.create(slug="bench", name="Bench")
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / ("rollout_data" if fmt == "verl" else "bench--m")
        folder.mkdir()
        if fmt == "verl":
            rows, written = write_verl(folder, rng)
        else:
            rows, written = write_verifiers(folder, rng, int(args.mb * 1e6))
        t0 = time.perf_counter()
        report = import_path(project=project, path=folder)
        dt = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = import_path(project=project, path=folder)
        dt_again = time.perf_counter() - t1
    stored = Rollout.objects.count()
    turns = Turn.objects.count()
    calls = ToolCall.objects.count()
    assert not report.problems, report.problems[:3]
    assert stored == rows and report.runs[0].rollouts == rows, (stored, rows)
    assert again.runs[0].rollouts == 0 and Rollout.objects.count() == rows
    connection.close()
    rate = rows / dt
    print(f"imported {rows} rollouts ({written / 1e6:.1f} MB, {turns} turns, {calls} tool calls) in {dt:.1f} s; "
          f"re-import {dt_again:.1f} s stored nothing", file=sys.stderr)
    print(json.dumps({"format": fmt, "import_rollouts_per_s": round(rate), "target": TARGET_RATE, "ok": rate >= TARGET_RATE,
                      "rollouts": rows, "turns": turns, "tool_calls": calls, "mb": round(written / 1e6, 1),
                      "seconds": round(dt, 2), "mb_per_s": round(written / 1e6 / dt, 1),
                      "reimport_seconds": round(dt_again, 2)}))


if __name__ == "__main__":
    main()
