"""Upgrade of a filled database across search migration 0002 (issue 30 item 1): the release before it
(git commit TODAYS_SCHEMA: search_doc with a stored tsvector and an id) makes and fills its schema
through its own API and indexer; today's `migrate` rewrites search_doc without them and builds the
words index over the bodies; every search finds the same rollouts as before, and text logged after
the upgrade is indexed and found. Migration 0003 then adds the index a run's deletion reads by."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psycopg

from tests.ops.upgrade import ADMIN_URL, DB, REPO, release_filled, run

TODAYS_SCHEMA = "4480315"  # main before search 0002

QUERIES = [{"q": "question"}, {"q": "answer 3"}, {"q": "a.py", "mode": "substring"},
           {"q": "answer [0-4]", "mode": "regex"}, {"q": "ls", "in": "tool_args"}, {"q": "answer", "in": "content"}]
SEARCH = """
import django, json, sys
QUERIES = sys.argv[1]
django.setup()
from deeprepo_web.search.indexer import search_index_update
while search_index_update(budget_seconds=30):  # what beat does after ingest
    pass
from deeprepo_web.accounts.models import Project
from deeprepo_web.search.selectors import search_page, search_scope
from deeprepo_web.search.spec import spec_parse
project = Project.objects.get(slug="demo")
found = {}
for params in json.loads(QUERIES):
    spec = spec_parse(params)
    results, _ = search_page(scope=search_scope(project=project, spec=spec), spec=spec)
    found[json.dumps(params)] = sorted([r.rollout.run.name, r.rollout.step, r.turn_index] for r in results)
print(json.dumps(found))
"""

LATE = """
import django
django.setup()
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Run
rollouts_ingest(run=Run.objects.get(name="before-a"), rollouts=[{"example_key": "ex-9", "step": 9, "turns": [
    {"role": "assistant", "content": "a kumquat after the upgrade"}]}])
"""


def _one(sql: str) -> object:
    with psycopg.connect(f"{ADMIN_URL.rpartition('/')[0]}/{DB}") as conn:
        row = conn.execute(sql).fetchone()
        return row[0] if row else None


COLUMNS = "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns " \
          "WHERE table_name = 'search_doc'"


def _search(code: Path, data: str, queries: list[dict[str, str]]) -> dict[str, list[list[object]]]:
    out = run([sys.executable, "-c", SEARCH, json.dumps(queries)], code, DEEPREPO_DATA_DIR=data)
    return dict(json.loads(out.splitlines()[-1]))


def test_a_filled_database_moves_from_the_search_copy_to_expression_indexes(tmp_path, upgrade_db):
    previous, data = release_filled(TODAYS_SCHEMA, tmp_path)
    before = _search(previous, data, QUERIES)
    assert _one(COLUMNS) == "id,src,obj,rollout_id,run_id,turn_index,body,tsv"
    prompts = _one("SELECT count(*) FROM search_doc WHERE src = 'prompt'")
    rollouts = _one("SELECT count(*) FROM runs_rollout")
    assert all(before.values()), before  # every search found something in the old release

    out = run([sys.executable, "manage.py", "migrate", "--no-input"], REPO, DEEPREPO_DATA_DIR=data)
    assert "Applying search.0002_tsv_from_body" in out
    # migrate runs 0004 too: its documents are one per rollout (the fold itself: test_search_fold.py).
    assert _one(COLUMNS) == "src,obj,part,rollout_id,run_id,body"
    assert _one("SELECT count(*) FROM search_doc WHERE src = 'prompt'") == prompts  # every document carried over
    assert _one("SELECT count(*) FROM search_doc WHERE src = 'rollout'") == rollouts  # ... folded per rollout
    assert "to_tsvector" in str(_one("SELECT indexdef FROM pg_indexes WHERE indexname = 'search_doc_tsv'"))
    # 0003: a run's documents found by an index (built concurrently, so it must have come out valid).
    assert "Applying search.0003_doc_run_index" in out
    assert _one("SELECT indisvalid FROM pg_index WHERE indexrelid = 'search_doc_run'::regclass") is True
    after = _search(REPO, data, QUERIES)
    assert after == before

    # Text logged after the upgrade is indexed and found.
    run([sys.executable, "-c", LATE], REPO, DEEPREPO_DATA_DIR=data)
    found = _search(REPO, data, [{"q": "kumquat"}, {"q": "kumqu", "mode": "substring"}])
    assert list(found.values()) == [[["before-a", 9, 0]], [["before-a", 9, 0]]]
