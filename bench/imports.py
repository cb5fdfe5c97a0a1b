"""Full import throughput: a ~100 MB verifiers results.jsonl into Postgres through import_path().

Generates the file with bench/parse_formats.py's realistic rows (8 assistant turns with tool calls,
tool outputs, reward components, timing), imports it into a fresh scratch database (parse + every
rollout, turn and tool call stored), then imports it again (nothing new may be stored).
Target: >= 2,000 rollouts/s. Last line: {"import_rollouts_per_s": N, ...}.

    python bench/imports.py [MB]
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import scratch_database  # noqa: E402
from bench.parse_formats import make_row  # noqa: E402

TARGET_BYTES = int(float(sys.argv[1]) * 1e6) if len(sys.argv) > 1 else 100_000_000
TARGET_RATE = 2000


def main() -> None:
    url = scratch_database("bench_imports")
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
        folder = Path(tmp) / "bench--m"
        folder.mkdir()
        path = folder / "results.jsonl"
        written = rows = 0
        with open(path, "w") as f:
            while written < TARGET_BYTES:
                line = make_row(rows, rng) + "\n"
                f.write(line)
                written += len(line)
                rows += 1
            # On disk before the clock starts: otherwise the kernel writes this file back while the
            # import runs, and the import pays for the benchmark's own setup.
            f.flush()
            os.fsync(f.fileno())
        (folder / "metadata.json").write_text(json.dumps({"env_id": "bench", "model": "m", "num_examples": rows // 4}))
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
    print(json.dumps({"import_rollouts_per_s": round(rate), "target": TARGET_RATE, "ok": rate >= TARGET_RATE,
                      "rollouts": rows, "turns": turns, "tool_calls": calls, "mb": round(written / 1e6, 1),
                      "seconds": round(dt, 2), "mb_per_s": round(written / 1e6 / dt, 1),
                      "reimport_seconds": round(dt_again, 2)}))


if __name__ == "__main__":
    main()
