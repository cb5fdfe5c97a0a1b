"""What deleting one run costs in search_doc, in a database bench/search.py filled (many runs).

    python bench/search.py --rollouts 100000 --ingest-rollouts 0 --repeat 1   # fills it
    python bench/doc_delete.py [--database deeprepo_bench_search]

For one mid-sized run: EXPLAIN ANALYZE of the two statements a deletion runs on search_doc (the
confirmation's count and the delete, rolled back), then `run_delete` of that run, timed. Deletes one
run each time it is run (the next run is the next one).
Last line: {"run_docs", "search_doc_rows", "count_ms", "delete_ms", "count_plan", "delete_plan", "run_delete_s"}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import BASE_URL  # noqa: E402


def _explain(cur: object, sql: str, params: list[object]) -> tuple[float, str]:
    """(execution ms, the plan's first line) of `sql`, run for real inside the caller's transaction."""
    cur.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)  # type: ignore[attr-defined]
    lines = [row[0] for row in cur.fetchall()]  # type: ignore[attr-defined]
    print("\n".join(lines), file=sys.stderr)
    took = next(float(m.group(1)) for line in lines if (m := re.search(r"Execution Time: ([\d.]+) ms", line)))
    scan = next((line.strip() for line in lines if "Scan" in line), lines[0].strip())
    return took, scan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="deeprepo_bench_search")
    args = parser.parse_args()
    head, _, _ = BASE_URL.rpartition("/")
    os.environ["DATABASE_URL"] = f"{head}/{args.database}"
    os.environ.setdefault("DEEPREPO_DATA_DIR", tempfile.mkdtemp(prefix="bench-doc-delete-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    from django.db import connection, transaction

    from deeprepo_web.runs.models import Run
    from deeprepo_web.runs.services import run_delete

    with connection.cursor() as cur:
        cur.execute("ANALYZE search_doc")
        cur.execute("SELECT run_id FROM runs_rollout GROUP BY run_id ORDER BY count(*), run_id "
                    "OFFSET (SELECT count(DISTINCT run_id) / 2 FROM runs_rollout) LIMIT 1")
        run_pk = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM search_doc")
        rows = cur.fetchone()[0]
        # Warm the cache the same way for both statements: the second would otherwise read it hot.
        cur.execute("SELECT count(*) FROM search_doc WHERE run_id = %s", [run_pk])
        docs = cur.fetchone()[0]
    with transaction.atomic(), connection.cursor() as cur:
        count_ms, count_plan = _explain(cur, "SELECT count(*) FROM search_doc WHERE run_id = %s", [run_pk])
        delete_ms, delete_plan = _explain(cur, "DELETE FROM search_doc WHERE run_id = %s", [run_pk])
        transaction.set_rollback(True)
    run = Run.objects.get(pk=run_pk)
    t0 = time.monotonic()
    run_delete(run=run)
    seconds = time.monotonic() - t0
    print(json.dumps({"run_docs": docs, "search_doc_rows": rows, "count_ms": round(count_ms, 1),
                      "delete_ms": round(delete_ms, 1), "count_plan": count_plan, "delete_plan": delete_plan,
                      "run_delete_s": round(seconds, 2)}))


if __name__ == "__main__":
    main()
