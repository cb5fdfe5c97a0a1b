"""Upgrade of a filled database across search migration 0004 (one document per rollout, issue 30): the
release before it (git commit BEFORE_FOLD: a document per turn, tool call and rollout) makes, fills and
indexes its schema through its own API and indexer; `migrate` folds the documents into one per rollout;
every search finds the same rollouts and turns as before. Two rollouts the old indexer had not finished
come out whole too: one with a turn it had not reached (its folded document would have lacked that
turn: it is left to the new indexer), one logged after its last pass (no document at all)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psycopg

from tests.ops.test_search_upgrade import LATE, QUERIES, SEARCH
from tests.ops.upgrade import ADMIN_URL, DB, REPO, release_filled, run

BEFORE_FOLD = "2178252"  # main before search 0004

MORE = QUERIES + [{"q": "a.py", "in": "tool_output", "mode": "substring"}, {"q": "question 2"},
                  {"q": "cmd.*ls", "mode": "regex", "in": "tool_args"}]


def _one(sql: str) -> object:
    with psycopg.connect(f"{ADMIN_URL.rpartition('/')[0]}/{DB}") as conn:
        row = conn.execute(sql).fetchone()
        return row[0] if row else None


def _search(code: Path, data: str, queries: list[dict[str, str]]) -> dict[str, list[list[object]]]:
    out = run([sys.executable, "-c", SEARCH, json.dumps(queries)], code, DEEPREPO_DATA_DIR=data)
    return dict(json.loads(out.splitlines()[-1]))


def test_a_filled_database_folds_its_documents_into_one_per_rollout(tmp_path, upgrade_db):
    previous, data = release_filled(BEFORE_FOLD, tmp_path)
    before = _search(previous, data, MORE)  # the old indexer's passes first, then the searches
    assert all(before.values()), before
    assert _one("SELECT count(*) FROM search_doc WHERE src IN ('turn', 'call')") == 30
    # As if the old indexer had not reached one turn yet ("answer 2" of before-b) ...
    _one("DELETE FROM search_doc d USING runs_turn t, runs_rollout r, runs_run u WHERE d.src = 'turn' "
         "AND d.obj = t.id AND t.rollout_id = r.id AND r.run_id = u.id AND u.name = 'before-b' "
         "AND t.content = 'answer 2' RETURNING 1")
    # ... nor a rollout logged after its last pass.
    run([sys.executable, "-c", LATE], previous, DEEPREPO_DATA_DIR=data)

    out = run([sys.executable, "manage.py", "migrate", "--no-input"], REPO, DEEPREPO_DATA_DIR=data)
    assert "Applying search.0004_one_doc_per_rollout" in out
    columns = ("SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
               "WHERE table_name = 'search_doc'")
    assert _one(columns) == "src,obj,part,rollout_id,run_id,body"
    # Ten rollouts before the upgrade, one of them unfinished: nine folded; the prompts as they were.
    assert _one("SELECT count(*) FROM search_doc WHERE src = 'rollout'") == 9
    assert _one("SELECT count(*) FROM search_doc WHERE src NOT IN ('rollout', 'prompt')") == 0
    body = str(_one("SELECT d.body FROM search_doc d JOIN runs_rollout r ON r.id = d.obj JOIN runs_run u "
                    "ON u.id = r.run_id WHERE d.src = 'rollout' AND u.name = 'before-a' AND r.step = 1"))
    assert body.index("question 1") < body.index("answer 1") < body.index("a.py")  # in turn order
    assert _one("SELECT string_agg(src, ',' ORDER BY src) FROM search_watermark") == "prompt,rollout"
    indexes = str(_one("SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes "
                       "WHERE tablename = 'search_doc'"))
    assert indexes in ("search_doc_pkey,search_doc_run,search_doc_trgm,search_doc_tsv",
                       "search_doc_pkey,search_doc_run,search_doc_tsv"), indexes
    assert "to_tsvector" in str(_one("SELECT indexdef FROM pg_indexes WHERE indexname = 'search_doc_tsv'"))

    after = _search(REPO, data, [*MORE, {"q": "kumquat"}])  # the new indexer's passes first
    assert _one("SELECT count(*) FROM search_doc WHERE src = 'rollout'") == 11
    assert after.pop(json.dumps({"q": "kumquat"})) == [["before-a", 9, 0]]
    assert after == before
    assert ["before-b", 2, 1] in after[json.dumps({"q": "answer", "in": "content"})]  # the unfinished turn
