"""Jobs: time from the launch form's POST to the job RUNNING (local and Slurm, each also on a queue of
its own served by a worker started for that cluster alone, `-Q <queue>`), and bursts of
jobs submitted at once (every one reaches a final state; none lost, none started twice).

Real parts: gunicorn serving the form, a Celery worker + beat on Redis (sync every 2 s, the
default), a single-node Slurm, the local backend. Target: median and p95 <= 3 s to RUNNING.
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import scratch_database, web_server  # noqa: E402

FINAL = ("succeeded", "failed", "cancelled", "lost")
TARGET_S = 3.0


def setup_django(url: str, secret_key: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["SECRET_KEY"] = secret_key
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise


def seed(work: Path, slurm_conf: str | None) -> dict[str, Any]:
    from django.contrib.auth.models import User

    from deeprepo_web.accounts.services import project_create
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.templates import template_save

    user = User.objects.create_user("bench", password="bench-pass-123")
    project = project_create(slug="bench", name="Bench", owner=user)
    template_save(project=project, slug="sleep", name="Sleep", kind="train",
                  command_template="sleep {seconds}",
                  params_schema=[{"name": "seconds", "type": "float", "default": 1, "min": 0, "max": 600}])
    out = {"local": cluster_save(project=project, name="local", kind="local",
                                 settings_in={"state_dir": str(work / "local-jobs")}).pk,
           "local_queue": cluster_save(project=project, name="local-q", kind="local", queue="bench-local",
                                       settings_in={"state_dir": str(work / "local-q-jobs")}).pk}
    if slurm_conf:
        out["slurm"] = cluster_save(project=project, name="slurm", kind="slurm", settings_in={
            "slurm_conf": slurm_conf, "state_dir": str(work / "slurm-state")}).pk
        out["slurm_queue"] = cluster_save(project=project, name="slurm-q", kind="slurm", queue="bench-slurm",
                                          settings_in={"slurm_conf": slurm_conf,
                                                       "state_dir": str(work / "slurm-q-state")}).pk
    return out


def login(site: str) -> httpx.Client:
    client = httpx.Client(base_url=site, timeout=60, follow_redirects=False)
    client.get("/login/")
    r = client.post("/login/", data={"username": "bench", "password": "bench-pass-123",
                                     "csrfmiddlewaretoken": client.cookies["csrftoken"]})
    assert r.status_code == 302, r.text[:500]
    return client


def post_launch(client: httpx.Client, cluster_id: int, seconds: float) -> str:
    r = client.post("/p/bench/jobs/new/sleep/", data={
        "csrfmiddlewaretoken": client.cookies["csrftoken"], "cluster": str(cluster_id),
        "param_seconds": str(seconds)}, headers={"Referer": str(client.base_url)})
    assert r.status_code == 302, (r.status_code, r.text[:800])
    m = re.search(r"/jobs/([a-z0-9]+)/$", r.headers["location"])
    assert m, r.headers["location"]
    return m.group(1)


def status_of(db: psycopg.Connection[Any], public_id: str) -> str:
    row = db.execute("SELECT status FROM jobs_job WHERE public_id = %s", [public_id]).fetchone()
    return str(row[0]) if row else ""


def time_to_running(site: str, db_url: str, cluster_id: int, n: int) -> list[float]:
    client = login(site)
    out = []
    with psycopg.connect(db_url, autocommit=True) as db:
        for _ in range(n):
            t0 = time.monotonic()
            job = post_launch(client, cluster_id, 1)
            while True:
                s = status_of(db, job)
                if s in ("running", *FINAL):
                    break
                if time.monotonic() - t0 > 60:
                    raise RuntimeError(f"job {job} stuck in {s}")
                time.sleep(0.02)
            out.append(time.monotonic() - t0)
            # Let it finish: each sample measures an idle cluster's latency, not its queue.
            while status_of(db, job) not in FINAL and time.monotonic() - t0 < 60:
                time.sleep(0.1)
    return out


def burst(site: str, db_url: str, cluster_id: int, n: int, timeout: float) -> dict[str, Any]:
    clients = [login(site) for _ in range(8)]
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: post_launch(clients[i % 8], cluster_id, 1), range(n)))
    posted = time.monotonic() - t0
    with psycopg.connect(db_url, autocommit=True) as db:
        while True:
            rows = db.execute("SELECT status, count(*) FROM jobs_job WHERE public_id = ANY(%s) GROUP BY status",
                              [ids]).fetchall()
            counts = {str(s): int(c) for s, c in rows}
            final = sum(counts.get(s, 0) for s in FINAL)
            if final == n or time.monotonic() - t0 > timeout:
                break
            time.sleep(0.5)
        externals = db.execute("SELECT external_id FROM jobs_job WHERE public_id = ANY(%s)", [ids]).fetchall()
    return {"jobs": n, "final": final, "by_status": counts, "post_s": round(posted, 2),
            "all_final_s": round(time.monotonic() - t0, 2), "ids": ids,
            "distinct_external_ids": len({e[0] for e in externals if e[0]})}


def summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median": round(statistics.median(xs), 3), "p95": round(xs[min(len(xs) - 1, int(len(xs) * 0.95))], 3),
            "max": round(xs[-1], 3), "n": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--no-slurm", action="store_true")
    args = ap.parse_args()

    from tests.infra.slurm import start_slurm
    from tests.jobs.worker import start_worker, stop_worker

    work = Path(tempfile.mkdtemp(prefix="deeprepo-bench-jobs-"))
    secret_key = secrets.token_urlsafe(40)
    db_name = f"bench_jobs_{secrets.token_hex(3)}"
    url = scratch_database(db_name)
    setup_django(url, secret_key)
    slurm = None if args.no_slurm else start_slurm()
    clusters = seed(work, str(slurm.conf) if slurm else None)
    worker = start_worker(db_name, secret_key, concurrency=8, sync_seconds=2.0)
    # One worker per cluster queue, as beside a cluster: no beat (the default worker's beat sends
    # each cluster its sync on its queue).
    queues = ("bench-local", "bench-slurm") if slurm else ("bench-local",)
    per_queue = [start_worker(db_name, secret_key, concurrency=2, sync_seconds=2.0, broker_url=worker.broker_url,
                              flush=False, beat=False, queues=(q,), name=q) for q in queues]
    os.environ["CELERY_BROKER_URL"] = worker.broker_url
    result: dict[str, Any] = {"target_to_running_s": TARGET_S}
    try:
        with web_server(url) as site:
            result["local_to_running_s"] = summary(time_to_running(site, url, clusters["local"], args.samples))
            result["local_queue_to_running_s"] = summary(
                time_to_running(site, url, clusters["local_queue"], args.samples))
            if slurm:
                result["slurm_to_running_s"] = summary(time_to_running(site, url, clusters["slurm"], args.samples))
                result["slurm_queue_to_running_s"] = summary(
                    time_to_running(site, url, clusters["slurm_queue"], args.samples))
            for kind in ("local", "slurm"):
                if kind not in clusters or not args.burst:
                    continue
                b = burst(site, url, clusters[kind], args.burst, timeout=900)
                ids = b.pop("ids")
                if kind == "local":
                    dirs = [p.name for p in (work / "local-jobs").iterdir()]
                    started = {i: sum(d.startswith(f"{i}-") for d in dirs) for i in ids}
                else:
                    assert slurm is not None
                    names = slurm.run("squeue", "-h", "--states=all", "-o", "%j").stdout.split()
                    comp = (slurm.root / "jobcomp.txt").read_text() if (slurm.root / "jobcomp.txt").exists() else ""
                    started = {i: max(names.count(f"deeprepo-{i}"), comp.count(f"Name=deeprepo-{i} ")) for i in ids}
                b["lost"] = b["jobs"] - b["final"] + b["by_status"].get("lost", 0)
                b["never_started"] = sum(1 for c in started.values() if c == 0)
                b["doubled"] = sum(1 for c in started.values() if c > 1)
                result[f"burst_{kind}"] = b
                print(f"burst {kind}: {b}", flush=True)
    finally:
        stop_worker(worker)
        for w in per_queue:
            stop_worker(w)
        if slurm:
            slurm.stop()
    runs = [v for k, v in result.items() if k.endswith("_to_running_s") and isinstance(v, dict)]
    bursts = [v for k, v in result.items() if k.startswith("burst_")]
    result["ok"] = (all(r["p95"] <= TARGET_S for r in runs)
                    and all(b["final"] == b["jobs"] and b["doubled"] == 0 and b["never_started"] == 0
                            and b["by_status"].get("succeeded", 0) == b["jobs"] for b in bursts))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
