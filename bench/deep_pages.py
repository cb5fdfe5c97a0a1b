"""The deepest page of a 100,000-row list: OFFSET (the old pagers) against a keyset cursor (front/paging.py).

A scratch database with one run of N rollouts and a project of N runs (bulk inserts), then for each
list and order the last page read both ways, `--repeat` times after a warm-up; median wall time of
the query plus the Python that builds the page. Lists: a run's rollouts by id and by -reward (ties
and NULLs: rewards take four values and some are NULL), the runs table by -created and by name.
Last line: one JSON object with the numbers.

    python bench/deep_pages.py [--rows 100000] [--repeat 7] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import db_url, scratch_database  # noqa: E402

DB = "bench_deep_pages"
PER_PAGE = 50


def _seed(rows: int) -> None:
    from django.utils import timezone

    from deeprepo_web.accounts.models import Project
    from deeprepo_web.runs.models import Example, Rollout, Run

    project = Project.objects.create(slug="deep", name="deep")
    now = timezone.now()
    # Runs: creation times tie in tens, names in hundreds.
    for start in range(0, rows, 10_000):
        Run.objects.bulk_create([Run(project=project, name=f"run-{i % 100:03d}",
                                     created_at=now - timezone.timedelta(seconds=i // 10))
                                 for i in range(start, min(rows, start + 10_000))])
    run = Run.objects.filter(project=project).first()
    assert run is not None
    examples = Example.objects.bulk_create([Example(project=project, key=f"ex-{i}", key_hash=f"{i:064x}")
                                            for i in range(1000)])
    for start in range(0, rows, 10_000):
        Rollout.objects.bulk_create([
            Rollout(run=run, uid=f"u{i}", example=examples[i % 1000], step=i // 1000, sample_index=i % 8,
                    reward=None if i % 13 == 0 else (i % 4) / 3)
            for i in range(start, min(rows, start + 10_000))])
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("ANALYZE")


def _time(fn: Any, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _measure(rows: int, repeat: int) -> dict[str, Any]:
    from deeprepo_web.explorer.selectors import RunQuery, run_table
    from deeprepo_web.front.paging import cursor_at
    from deeprepo_web.runs.models import Rollout, Run
    from deeprepo_web.trajectories.selectors import ROLLOUT_ORDERS, rollout_page

    run = Run.objects.filter(project__slug="deep").order_by("id").first()
    assert run is not None
    n = Rollout.objects.filter(run=run).count()
    last_start = (n - 1) // PER_PAGE * PER_PAGE
    out: dict[str, Any] = {"rows": n, "per_page": PER_PAGE}
    for order in ("id", "-reward"):
        keys = ROLLOUT_ORDERS[order]
        qs = Rollout.objects.filter(run=run).order_by(*(k.order() for k in keys))
        before_last = qs[last_start - 1]  # the row whose cursor opens the last page
        cursor = cursor_at(before_last, keys=keys, order=order)
        offset_page = rollout_page(run=run, order=order, page=last_start // PER_PAGE + 1, per_page=PER_PAGE)
        keyset = rollout_page(run=run, order=order, cursor=cursor, per_page=PER_PAGE)
        assert [r.pk for r in offset_page.rows] == [r.pk for r in keyset.rows], order
        out[f"rollouts {order}"] = {
            "offset_ms": round(_time(lambda o=order: rollout_page(run=run, order=o, page=last_start // PER_PAGE + 1,
                                                                  per_page=PER_PAGE), repeat), 2),
            "cursor_ms": round(_time(lambda o=order, c=cursor: rollout_page(run=run, order=o, cursor=c,
                                                                            per_page=PER_PAGE), repeat), 2),
        }
    project = run.project
    runs_n = Run.objects.filter(project=project).count()
    runs_last = (runs_n - 1) // PER_PAGE * PER_PAGE
    for sort in ("-created", "name"):
        query = RunQuery(sort=sort)
        everything = run_table(project=project, query=query, per_page=runs_n).rows  # the order, once
        pivot = everything[runs_last - 1]
        keys = _run_keys(sort)
        cursor = cursor_at(pivot, keys=keys, order=f"runs {sort} ")
        field = keys[0].field
        plain = Run.objects.filter(project=project).order_by(keys[0].order(), "-id")
        page = run_table(project=project, query=query, cursor=cursor, per_page=PER_PAGE)
        assert [r.pk for r in page.rows] == [r.pk for r in everything[runs_last:runs_last + PER_PAGE]], sort
        out[f"runs {sort}"] = {
            "offset_ms": round(_time(lambda p=plain: list(p[runs_last:runs_last + PER_PAGE + 1]), repeat), 2),
            "cursor_ms": round(_time(lambda q=query, c=cursor: run_table(project=project, query=q, cursor=c,
                                                                         per_page=PER_PAGE), repeat), 2),
            "sort_column": field,
        }
    return out


def _run_keys(sort: str) -> list[Any]:
    from deeprepo_web.explorer.selectors import RUN_SORTS
    from deeprepo_web.front.paging import SortKey, id_key

    column, kind, nullable = RUN_SORTS[sort.lstrip("-")]
    return [SortKey(column, kind, desc=sort.startswith("-"), nullable=nullable), id_key(desc=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--reuse", action="store_true", help="keep the seeded database of a previous run")
    args = parser.parse_args()
    url = db_url(DB) if args.reuse else scratch_database(DB)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")
    import django

    django.setup()
    if not args.reuse:
        t = time.perf_counter()
        _seed(args.rows)
        print(f"seeded {args.rows} runs and {args.rows} rollouts in {time.perf_counter() - t:.0f} s", flush=True)
    result = _measure(args.rows, args.repeat)
    result["load"] = os.getloadavg()
    for name, value in result.items():
        if isinstance(value, dict):
            print(f"{name:>18}: OFFSET {value['offset_ms']:8.2f} ms   cursor {value['cursor_ms']:6.2f} ms")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
