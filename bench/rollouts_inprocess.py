"""Python CPU of one rollout batch on the server, in-process: `runs.api._batch` (pydantic's
validate_json) + `rollouts_ingest`, the shared workload's shape (64 rollouts x 8 turns of ~1 KB,
4 tool calls, a client uid each). No HTTP, no gunicorn: what the ingest code itself costs, which
the end-to-end bench cannot resolve on a loaded machine. Run it from each checkout in turn (its
PYTHONPATH) against a scratch database. Last line: one JSON object.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch> PYTHONPATH=. \\
        uv run python bench/rollouts_inprocess.py [--batches 20]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")

import django  # noqa: E402

django.setup()

import orjson  # noqa: E402
from django.db import connection  # noqa: E402

from bench.ingest import _proc_cpu_s  # noqa: E402
from deeprepo_web.accounts.models import Project  # noqa: E402
from deeprepo_web.runs import schemas, services  # noqa: E402
from deeprepo_web.runs.api import _batch  # noqa: E402
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest  # noqa: E402

CONTENTS = [(f"x{i} " * 256)[:1024] for i in range(50)]


def batch_body(base: int) -> bytes:
    """64 rollouts as ../shared/bench/deeprepo_web.py's rollout_steps builds them, with a uid."""
    records = []
    for i in range(base, base + 64):
        turns = []
        for t in range(8):
            role = "user" if t == 0 else ("assistant" if t % 2 else "tool")
            turn: dict[str, Any] = {"role": role, "content": CONTENTS[(i * 8 + t) % len(CONTENTS)]}
            if role == "assistant":
                turn["tool_calls"] = [{"name": "bash", "arguments": {"cmd": f"pytest -k t{t}"}}]
            turns.append(turn)
        records.append({"uid": uuid.uuid4().hex, "example_key": f"ex-{(i % 64) // 8}", "step": i // 64,
                        "sample_index": i % 8, "reward": 0.5, "reward_components": {"correct": 0.5, "format": 1.0},
                        "num_turns": 8, "output_tokens": 900, "turns": turns})
    return orjson.dumps(records)


class _Request:
    def __init__(self, body: bytes) -> None:
        self.body = body


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20)
    a = ap.parse_args()
    project, _ = Project.objects.get_or_create(slug="bench-inprocess", defaults={"name": "bench-inprocess"})
    run, _ = services.run_create(project=project, name=f"inprocess-{uuid.uuid4().hex[:6]}")
    bodies = [batch_body(k * 64) for k in range(a.batches + 3)]

    def one(body: bytes) -> None:
        items = _batch(_Request(body), schemas.rollout_batch, "rollouts")  # type: ignore[arg-type]
        rollouts_ingest(run=run, rollouts=items, body=body)

    for body in bodies[:3]:  # warm: column types, example rows, imports
        one(body)
    with connection.cursor() as cur:  # the Postgres server runs on this machine: its backend's /proc entry
        cur.execute("SELECT pg_backend_pid()")
        backend = cur.fetchone()[0]
    wall, cpu, pg_cpu = time.perf_counter(), time.process_time(), _proc_cpu_s(backend)
    for body in bodies[3:]:
        one(body)
    wall, cpu, pg_cpu = time.perf_counter() - wall, time.process_time() - cpu, _proc_cpu_s(backend) - pg_cpu
    n = a.batches * 64
    print(json.dumps({"bench": "rollouts_inprocess", "rollouts": n, "python_cpu_us_per_rollout": round(cpu * 1e6 / n, 1),
                      "postgres_cpu_us_per_rollout": round(pg_cpu * 1e6 / n, 1),
                      "wall_us_per_rollout": round(wall * 1e6 / n, 1), "load_avg_1m": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
