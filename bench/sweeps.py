"""Sweeps: time from a 200-trial sweep's creation to all 200 trials queued (each a Job + queued Run,
its dispatch task sent to the broker). Target: <= 10 s, for random and for TPE.

Real parts: a scratch Postgres database, Redis as the broker (database DEEPREPO_JOBS_REDIS_DB,
default 5, flushed at the end), the same sweep_advance the Celery task runs. No worker consumes
the dispatch messages: this measures the sweep's side, not the cluster's. Last line: one JSON object.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import scratch_database  # noqa: E402

TRIALS = 200
TARGET_S = 10.0


def main() -> int:
    url = scratch_database("bench_sweeps")
    broker = f"redis://127.0.0.1:6379/{os.environ.get('DEEPREPO_JOBS_REDIS_DB', '5')}"
    os.environ.update({"DATABASE_URL": url, "SECRET_KEY": secrets.token_hex(32), "CELERY_BROKER_URL": broker,
                       "DJANGO_SETTINGS_MODULE": "deeprepo_web.settings"})
    import django

    django.setup()
    import redis
    from django.contrib.auth.models import User

    from deeprepo_web.accounts.services import project_create
    from deeprepo_web.jobs.models import Job
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.templates import template_save
    from deeprepo_web.sweeps.models import Trial
    from deeprepo_web.sweeps.services import sweep_advance, sweep_create

    user = User.objects.create_user("bench", password="bench-pass-123")
    project = project_create(slug="bench", name="Bench", owner=user)
    template = template_save(
        project=project, slug="sleep", name="Sleep", kind="train", command_template="sleep {seconds} # {lr}",
        params_schema=[{"name": "seconds", "type": "float", "default": 1, "min": 0, "max": 600},
                       {"name": "lr", "type": "float", "default": 0.1, "min": 1e-6, "max": 1}])
    work = Path(tempfile.mkdtemp(prefix="bench-sweeps-"))
    cluster = cluster_save(project=project, name="local", kind="local",
                           settings_in={"state_dir": str(work / "local-jobs")})
    queue = redis.Redis.from_url(broker)
    result: dict[str, Any] = {"bench": "sweeps", "trials": TRIALS, "target_s": TARGET_S}
    try:
        for method in ("random", "tpe"):
            t0 = time.monotonic()
            sweep = sweep_create(project=project, template=template, cluster=cluster, user=user,
                                 specs={"seconds": "0.5 .. 5", "lr": "1e-5 .. 0.5 log"}, method=method,
                                 metric="reward", max_trials=TRIALS, max_parallel=TRIALS, pruner="median")
            sweep_advance(sweep_id=sweep.pk)
            seconds = time.monotonic() - t0
            trials = Trial.objects.filter(sweep=sweep, job__isnull=False).count()
            jobs = Job.objects.filter(sweep_trial__sweep=sweep, status="pending").count()
            result[method] = {"seconds": round(seconds, 2), "trials_queued": trials, "jobs_pending": jobs,
                              "per_trial_ms": round(1000 * seconds / max(1, trials), 1)}
            print(f"{method}: {trials} trials queued in {seconds:.2f}s", file=sys.stderr)
        result["ok"] = all(result[m]["seconds"] <= TARGET_S and result[m]["trials_queued"] == TRIALS
                           for m in ("random", "tpe"))
    finally:
        queue.flushdb()  # the dispatch messages nobody will consume
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
