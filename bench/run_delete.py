"""Deleting a big run: how long `run_delete` takes for one run of 10^5 rollouts (~8 turns each) with
its tool calls, metric points, search documents, labels and blobs, beside another run that stays.

    python bench/run_delete.py [--rollouts 100000] [--reuse] [--parts]

A scratch database (`deeprepo_bench_run_delete`) is seeded by `manage.py seed_scale` (two runs), the
indexer makes every body searchable, a label marks every tenth rollout, a judge's verdict is kept on
every tenth of the other run's (their foreign keys are checked for each deleted rollout) and a few hundred
blobs are stored for the big run; then the big run is deleted once through the service the page and the API
call. `--reuse` keeps a database seeded before (the run to delete must still be there).
Last line: {"rollouts", "turns", "docs", "marks", "blobs", "verdicts", "turns_doc_bytes", "turns_toast_bytes", "seconds",
"other_run_kept"}: the turns documents' table on disk before the delete (both runs), all of it and its
TOAST part (table and index).

`--parts` deletes the run in a transaction rolled back at the end, after a CHECKPOINT, and times each
statement with the WAL it wrote (read from a second connection); the deferred foreign-key checks are timed
as `SET CONSTRAINTS ALL IMMEDIATE`. Its last line adds "parts": [{"sql" (its first 70 characters),
"count", "seconds", "wal_mb"}], the costliest first, and "wal_mb" in all. The run stays, so it can be
measured again with --reuse.
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
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import TURNS_DOC_SIZE_SQL, db_url, scratch_database  # noqa: E402

DB = "deeprepo_bench_run_delete"
BLOBS = 300


def _seed(url: str, rollouts: int) -> None:
    # Two runs: seed_scale spreads the rollouts over them, so the big one holds half; ask for twice.
    subprocess.run([sys.executable, "manage.py", "seed_scale", "--rollouts", str(rollouts * 2), "--runs", "2",
                    "--project", "bench", "--long-points", "1000", "--metric-steps", "300"],
                   cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, check=True)


def _prepare() -> Any:
    """Search documents, a label on every tenth rollout and blobs for the biggest run, a judge's verdicts on
    every tenth rollout of the other; returns the biggest."""
    from django.db import connection

    from deeprepo_web import storage
    from deeprepo_web.judge.models import JudgeJob
    from deeprepo_web.labels.models import Label
    from deeprepo_web.runs.models import BlobRef, Run
    from deeprepo_web.search.indexer import search_index_update

    run = max(Run.objects.filter(project__slug="bench"), key=lambda r: r.rollouts.count())
    while search_index_update(budget_seconds=600):
        pass
    label, _ = Label.objects.get_or_create(project=run.project, name="bench")
    with connection.cursor() as cur:
        cur.execute("INSERT INTO labels_mark (label_id, rollout_id, run_id, note, status, source, created_at) "
                    "SELECT %s, id, run_id, '', 'confirmed', 'person', now() FROM runs_rollout "
                    "WHERE run_id = %s AND id %% 10 = 0 ON CONFLICT DO NOTHING", [label.pk, run.pk])
        job, _ = JudgeJob.objects.get_or_create(project=run.project, rubric="bench", label=label, status="done")
        cur.execute("INSERT INTO judge_verdict (job_id, rollout_id, run_id, answer, explanation, citations, "
                    "input_tokens, output_tokens, created_at) SELECT %s, id, run_id, true, '', '{}', 0, 0, now() "
                    "FROM runs_rollout WHERE run_id <> %s AND id %% 10 = 0 ON CONFLICT DO NOTHING", [job.pk, run.pk])
    for i in range(BLOBS):
        sha = storage.blob_put(f"bench blob {run.pk} {i}".encode() * 200)
        BlobRef.objects.get_or_create(sha=sha, run=run)
    return run


def _counts(run: Any) -> dict[str, int]:
    from deeprepo_web.judge.models import Verdict
    from deeprepo_web.labels.models import Mark
    from deeprepo_web.runs.models import BlobRef, Turn
    from deeprepo_web.search.models import Doc

    return {"rollouts": run.rollouts.count(), "turns": Turn.objects.filter(rollout__run=run).count(),
            "docs": Doc.objects.filter(run_id=run.pk).count(), "marks": Mark.objects.filter(run=run).count(),
            "blobs": BlobRef.objects.filter(run=run).count(),
            "verdicts": Verdict.objects.exclude(run=run).count()}


def _turns_doc_bytes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(TURNS_DOC_SIZE_SQL)
        total, toast = cur.fetchone()
    return {"turns_doc_bytes": total, "turns_toast_bytes": toast}


def _delete_in_parts(run: Any, url: str) -> dict[str, Any]:
    from django.db import connection, transaction

    from deeprepo_web.runs.services import run_delete

    side = psycopg.connect(url, autocommit=True)

    def lsn() -> int:
        row = side.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
        return int(row[0]) if row else 0

    parts: dict[str, list[float]] = {}

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        wal, t0 = lsn(), time.monotonic()
        try:
            return execute(sql, params, many, context)
        finally:
            part = parts.setdefault(" ".join(sql.split())[:70], [0, 0.0, 0.0])
            part[0] += 1
            part[1] += time.monotonic() - t0
            part[2] += (lsn() - wal) / 1e6

    side.execute("CHECKPOINT")
    t0 = time.monotonic()
    with transaction.atomic(), connection.execute_wrapper(timed):
        run_delete(run=run)
        with connection.cursor() as cur:
            cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        seconds = time.monotonic() - t0
        transaction.set_rollback(True)
    side.close()
    rows: list[dict[str, Any]] = sorted(
        ({"sql": sql, "count": int(n), "seconds": round(t, 3), "wal_mb": round(w, 1)} for sql, (n, t, w) in parts.items()),
        key=lambda part: -part["seconds"])
    return {"seconds": round(seconds, 2), "wal_mb": round(sum(part["wal_mb"] for part in rows), 1), "parts": rows}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=100_000)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--parts", action="store_true")
    args = parser.parse_args()
    url = db_url(DB) if args.reuse else scratch_database(DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DEEPREPO_DATA_DIR", tempfile.mkdtemp(prefix="bench-run-delete-"))
    if not args.reuse:
        t0 = time.monotonic()
        _seed(url, args.rollouts)
        print(f"seeded in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from deeprepo_web.runs.models import Run
    from deeprepo_web.runs.services import run_delete

    run = _prepare()
    counts = {**_counts(run), **_turns_doc_bytes()}
    print(f"deleting {counts}", file=sys.stderr)
    if args.parts:
        measured = _delete_in_parts(run, url)
        for part in measured["parts"][:8]:
            print(f"{part['count']:4d} × {part['seconds']:7.2f} s {part['wal_mb']:8.1f} MB  {part['sql']}", file=sys.stderr)
        print(json.dumps({**counts, **measured}))
        return
    t0 = time.monotonic()
    run_delete(run=run)
    seconds = time.monotonic() - t0
    kept = Run.objects.filter(project__slug="bench").exists()
    print(json.dumps({**counts, "seconds": round(seconds, 2), "other_run_kept": kept}))


if __name__ == "__main__":
    main()
