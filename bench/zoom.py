"""Server time of a zoomed chart's re-fetch on a 1,000,000-point series.

A scratch database gets one run with a 10^6-step series (one spike, a few NaN) through the real
ingest. Then, in-process through Django's test client with a logged-in session (view, access
check, selector, JSON): the whole range at 800 buckets, zoomed windows of 10 % / 1 % / 0.1 % of the
steps at 800 buckets (the last reads raw points), and a hover's extremes lookup of one bucket.
Each figure: p50 / p95 ms over --requests requests after a warm-up. Target: zoomed re-fetch <= 50 ms.
Last line: one JSON object with the numbers.

    python bench/zoom.py [--points 1000000] [--requests 30]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import scratch_database  # noqa: E402

TARGET_MS = 50.0
BUCKETS = 800


def timed(client: Any, path: str, n: int) -> dict[str, float]:
    client.get(path)  # warm-up
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 200, (path, response.status_code)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = scratch_database("bench_zoom")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from deeprepo_web.accounts.models import Membership, Project
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    project = Project.objects.create(slug="zoom", name="Zoom")
    user = get_user_model().objects.create_user("zoom", password="zoom-pass-123")
    Membership.objects.create(project=project, user=user, role="admin")
    run, _ = run_create(project=project, name="long")
    n = args.points
    spike = int(n * 0.6173)
    rng = random.Random(0)
    t0 = time.perf_counter()
    for start in range(0, n, 50_000):
        batch = []
        for i in range(start, min(n, start + 50_000)):
            v = 1.0 + 0.1 * math.sin(i / 500) + rng.random() * 0.01
            batch.append({"step": i, "values": {"loss": 5.0 if i == spike else (math.nan if i % 99_991 == 7 else v)}})
        metrics_ingest(run=run, points=batch)
    ingest_s = time.perf_counter() - t0

    client = Client()
    client.force_login(user)
    base = f"/api/v1/runs/{run.public_id}/series?key=loss&buckets={BUCKETS}"
    result: dict[str, Any] = {"points": n, "buckets": BUCKETS, "ingest_s": round(ingest_s, 1)}
    result["whole"] = timed(client, base, args.requests)
    for share in (0.1, 0.01, 0.001):
        half = int(n * share / 2)
        result[f"zoom_{share:g}"] = timed(client, f"{base}&start={spike - half}&end={spike + half}", args.requests)
    width = math.ceil(n / BUCKETS)
    result["extremes"] = timed(client, f"{base}&extremes=1&start={spike - width // 2}&end={spike + width // 2}",
                               args.requests)
    raw = client.get(f"{base}&start={spike - 300}&end={spike + 300}").json()
    result["raw_zoom_shows_spike"] = raw["resolution"] == 1 and raw["value"][raw["step"].index(spike)] == 5.0
    zoomed = [v["p95_ms"] for k, v in result.items() if k.startswith("zoom_")]
    result["zoom_p95_max_ms"] = max(zoomed)
    result["target_ms"] = TARGET_MS
    result["ok"] = max(zoomed) <= TARGET_MS and result["raw_zoom_shows_spike"]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
