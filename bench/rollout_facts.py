"""Tool names and tool errors on the rollout row (runs 0013, the folded layout's step 2), measured on a
filled database: the run's error signatures and search's tool filter as they read tool-call rows
before, and the rollout row now (same data, alternating, in one process); the two columns' bytes; the
CPU of computing them at ingest; the migration's fill.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_facts uv run --no-sync python manage.py migrate
    DATABASE_URL=… uv run --no-sync python manage.py seed_scale --rollouts 2000000 --runs 3 --long-points 1000
    DATABASE_URL=… uv run --no-sync python bench/rollout_facts.py [--fill]

--fill also times runs 0013's fill over every rollout (it rewrites every row with tool calls: run it
last, on a database made for the bench). Prints one JSON object on its last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deeprepo_web.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from deeprepo_web.analysis.behaviour import rollout_counts, rollout_walk  # noqa: E402
from deeprepo_web.runs.ingest.rollouts import rollout_facts  # noqa: E402
from deeprepo_web.search import signatures  # noqa: E402
from tests.factories import rollout  # noqa: E402

# The errors of a run as signatures.py read them before runs 0013: from the tool-call rows, with the
# turn's index looked up per example, and the final errors in a second pass.
OLD_SIGNATURES = "WITH errs AS (" + f"""
    SELECT 'tool' AS kind, c.name AS tool, {signatures._normalise('c.output')} AS sig, r.step, r.id AS rollout_id,
           (SELECT ti.index FROM runs_turn ti WHERE ti.id = c.turn_id) AS turn_index
    FROM runs_toolcall c JOIN runs_rollout r ON r.id = c.rollout_id
    WHERE r.run_id = %s AND c.is_error
    UNION ALL
    SELECT 'final', '', {signatures._normalise('r.error')}, r.step, r.id, NULL
    FROM runs_rollout r WHERE r.run_id = %s AND r.error <> ''
""" + signatures._SQL[signatures._SQL.index("), top AS ("):]
assert OLD_SIGNATURES != signatures._SQL

OLD_TOOL = "EXISTS (SELECT 1 FROM runs_toolcall tc WHERE tc.rollout_id = r.id AND tc.name = %s)"
NEW_TOOL = "r.tools @> %s::jsonb"


def _ms(sql: str, params: list[object]) -> tuple[float, list[tuple[object, ...]]]:
    with connection.cursor() as cur:
        t = time.perf_counter()
        cur.execute(sql, params)
        rows = cur.fetchall()
        return (time.perf_counter() - t) * 1000, rows


def _pair(old: tuple[str, list[object]], new: tuple[str, list[object]], reps: int) -> dict[str, object]:
    """Both queries `reps` times, alternating; the same answer asserted."""
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(reps):
        for name, (sql, params) in (("old", old), ("new", new)):
            ms, rows = _ms(sql, params)
            times[name].append(ms)
            if name == "old":
                expected = rows
            else:
                assert rows == expected, (rows[:3], expected[:3])
    return {k: {"median_ms": round(statistics.median(v), 1), "min_ms": round(min(v), 1)} for k, v in times.items()}


SEARCHES = [{"q": "injection", "tool": "read_file"}, {"q": "injection", "tool": "no_such_tool"},
            {"q": "FileNotFoundError", "tool": "llm_batch"}, {"q": "db.py:42", "mode": "substring", "tool": "list_dir"}]


# On the oldest run (its id in "run"), which the newest-first scans reached last before the id range.
RUN_SEARCHES = [{"tool": "read_file"}, {"reward_min": "0.5"}, {"q": "injection", "tool": "read_file"}]


def _search_pages(reps: int) -> dict[str, object]:
    """The search page's first page (search_results) of project "scale" with a tool filter, its
    condition as before runs 0013 (an EXISTS on the tool-call rows; no id range for one run) and now
    (the row's `tools`, the run's id range), alternating; the same rollouts found."""
    from deeprepo_web.accounts.models import Project
    from deeprepo_web.runs.models import Run
    from deeprepo_web.search import sql as search_sql
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.selectors import search_results, search_scope
    from deeprepo_web.search.spec import spec_parse

    t = time.perf_counter()
    while search_index_update(budget_seconds=60):
        pass
    print(f"indexed in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    new_conditions = search_sql.rollout_conditions

    new_filters = search_sql.rollout_filters

    def old_conditions(spec, *, label_id):  # type: ignore[no-untyped-def]
        conds, params = new_conditions(spec, label_id=label_id)
        # (SEARCHES have no filter with a parameter before the tool's)
        return ([OLD_TOOL if c == NEW_TOOL else c for c in conds],
                [json.loads(p)[0] if c == NEW_TOOL else p for c, p in zip(conds, params, strict=False)])

    def old_filters(spec, *, run_ids, label_id):  # type: ignore[no-untyped-def]
        conds, params = old_conditions(spec, label_id=label_id)  # and no id range for one run
        return " AND ".join(["r.run_id = ANY(%s)", *conds]), [run_ids, *params]

    project = Project.objects.get(slug="scale")
    oldest = Run.objects.filter(project=project, rollouts__isnull=False).order_by("id").first()
    assert oldest is not None
    out: dict[str, object] = {}
    for params in [*SEARCHES, *({**p, "run": oldest.public_id} for p in RUN_SEARCHES)]:
        spec = spec_parse(params)
        scope = search_scope(project=project, spec=spec)
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(reps):
            for name, conditions, filters in (("old", old_conditions, old_filters), ("new", new_conditions, new_filters)):
                # selectors look both up in the module at each call
                search_sql.rollout_conditions, search_sql.rollout_filters = conditions, filters
                t = time.perf_counter()
                page = search_results(scope=scope, spec=spec)
                times[name].append((time.perf_counter() - t) * 1000)
                found = [r.rollout.pk for r in page.rows]
                if name == "old":
                    expected = found
                else:
                    assert found == expected
        search_sql.rollout_conditions, search_sql.rollout_filters = new_conditions, new_filters
        key = json.dumps(params)
        out[key] = {"found": len(expected), **{k: round(statistics.median(v), 1) for k, v in times.items()}}
        print("search", key, out[key], file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--fill", action="store_true")
    ap.add_argument("--search", action="store_true", help="also time search pages with a tool filter (indexes first)")
    args = ap.parse_args()
    with connection.cursor() as cur:
        cur.execute("SET statement_timeout = 0")
        cur.execute("SELECT run_id, count(*) FROM runs_rollout GROUP BY run_id ORDER BY 2 DESC LIMIT 1")
        run_id, n = cur.fetchone()
        cur.execute("SELECT count(*) FROM runs_rollout")
        total = cur.fetchone()[0]
        cur.execute("SELECT avg(pg_column_size(tools) + pg_column_size(tool_errors)), "
                    "avg(pg_column_size(r.*)) FROM runs_rollout r WHERE run_id = %s", [run_id])
        facts_bytes, row_bytes = cur.fetchone()
    out: dict[str, object] = {"bench": "rollout_facts", "rollouts": total, "run_rollouts": n,
                              "facts_bytes_per_rollout": round(float(facts_bytes), 1),
                              "rollout_row_bytes": round(float(row_bytes), 1)}
    print(f"run {run_id}: {n} rollouts of {total}; facts {facts_bytes:.1f} B of a {row_bytes:.0f} B row", file=sys.stderr)

    out["signatures"] = _pair((OLD_SIGNATURES, [run_id, run_id]), (signatures._SQL, [run_id]), args.reps)
    print("signatures", out["signatures"], file=sys.stderr)
    count = "SELECT count(*) FROM runs_rollout r WHERE r.run_id = %s AND {}"
    page = "SELECT r.id FROM runs_rollout r WHERE r.run_id = %s{} AND {} ORDER BY r.id DESC LIMIT 50"
    bound = (" AND r.id BETWEEN (SELECT min(id) FROM runs_rollout WHERE run_id = %s) "
             "AND (SELECT max(id) FROM runs_rollout WHERE run_id = %s)")  # as search/sql.py bounds one run
    for tool in ("read_file", "no_such_tool"):
        key = f"tool_filter_count_{tool}"
        out[key] = _pair((count.format(OLD_TOOL), [run_id, tool]),
                         (count.format(NEW_TOOL), [run_id, json.dumps([tool])]), args.reps)
        print(key, out[key], file=sys.stderr)
        key = f"tool_filter_page_{tool}"
        out[key] = _pair((page.format("", OLD_TOOL), [run_id, tool]),
                         (page.format(bound, NEW_TOOL), [run_id, run_id, run_id, json.dumps([tool])]), args.reps)
        print(key, out[key], file=sys.stderr)

    records = [rollout(f"ex-{i}", turns=8) for i in range(2000)]
    for r in records:
        r["turns"][3]["tool_calls"][0].update(is_error=True, output="Traceback:\n  x\nValueError: 3")
    t = time.process_time()
    for r in records:  # the one walk ingest makes per rollout: behaviour counts and the row's facts
        walk = rollout_walk(r)
        rollout_counts(r, walk)
        rollout_facts(walk)
    out["walk_counts_facts_cpu_us"] = round((time.process_time() - t) / len(records) * 1e6, 2)
    print("walk + counts + facts per rollout (8 turns, 32 calls):", out["walk_counts_facts_cpu_us"], "µs",
          file=sys.stderr)

    if args.search:
        out["search_pages"] = _search_pages(args.reps)

    if args.fill:
        import importlib

        fill = importlib.import_module("deeprepo_web.runs.migrations.0013_rollout_tools_tool_errors").fill
        digest = ("SELECT md5(string_agg(tools::text || tool_errors::text, ',' ORDER BY id)) FROM "
                  "(SELECT * FROM runs_rollout ORDER BY id LIMIT 100000) r")
        _, seeded = _ms(digest, [])
        t = time.perf_counter()
        fill(None, connection.schema_editor())
        secs = time.perf_counter() - t
        assert _ms(digest, [])[1] == seeded  # the fill finds what seed_scale wrote at ingest
        out["fill_s"] = round(secs, 1)
        out["fill_rollouts_per_s"] = round(total / secs)
        print(f"fill: {secs:.1f} s for {total} rollouts", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
