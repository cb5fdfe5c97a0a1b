"""Upgrade of a filled database across runs migrations 0013 (tool names and tool errors on the rollout
row, docs/scale.md's folded layout, step 2) and 0014 (their error signatures, and the final error's):
the release before them stores rollouts with failing and nested tool calls through its own API;
`migrate` fills the new columns from the stored calls; the run's error signatures (normalised in SQL by
that release, in Python by this one) and the search's tool filter answer as they did, and the filled
values are the ones the new release writes at ingest for the same records."""

from __future__ import annotations

import json
import sys

import psycopg

from tests.ops.test_search_upgrade import SEARCH
from tests.ops.upgrade import ADMIN_URL, DB, REPO, release_filled, run

BEFORE_FACTS = "4504b2c"  # main before runs 0013

RECORDS = [
    {"example_key": "f-0", "uid": "f0", "step": 1, "turns": [
        {"role": "user", "content": "fix the loader"},
        {"role": "assistant", "content": "trying", "tool_calls": [
            {"name": "run_code", "is_error": True,
             "output": "Traceback (most recent call last):\n  File \"/w/job-7/x.py\", line 3\nValueError: bad 42\n\n"},
            {"name": "read_file", "output": "ok"},
            {"name": "llm_batch", "output": "2 answers", "sub_calls": [
                {"name": "sub_llm", "is_error": True, "output": "  RateLimitError: 429 from 0xdeadbeef  "},
                {"name": "sub_llm", "output": "fine"}]}]},
        {"role": "tool", "content": "ValueError"},
        {"role": "assistant", "content": "again", "tool_calls": [
            {"name": "run_code", "is_error": True, "output": "x\r\nKeyError: 'k'\r\n"}]}]},
    {"example_key": "f-1", "uid": "f1", "step": 2, "turns": [{"role": "assistant", "content": "no tools"}]},
    {"example_key": "f-2", "uid": "f2", "step": 2, "turns": [
        {"role": "assistant", "content": "silent failure", "tool_calls": [
            {"name": "run_code", "is_error": True, "output": ""}, {"name": "run_code", "is_error": True}]}]},
    {"example_key": "f-3", "uid": "f3", "step": 3, "turns": [{"role": "assistant", "content": "waiting"}],
     "error": "Traceback (most recent call last):\n  File \"/srv/env.py\", line 88\n"
              "TimeoutError: sandbox 0x1f timed out after 30.5s at '/tmp/run-9'\n"},
]

STORE = """
import django, json, sys
django.setup()
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import run_create
from deeprepo_web.accounts.models import Project
run, _ = run_create(project=Project.objects.get(slug="demo"), name=sys.argv[2], environment="math")
rollouts_ingest(run=run, rollouts=json.loads(sys.argv[1]))
"""

SIGNATURES = """
import django, json
django.setup()
from deeprepo_web.runs.models import Run
from deeprepo_web.search.signatures import error_signatures
sigs, span = error_signatures(run=Run.objects.get(name="facts"))
print(json.dumps([[s.kind, s.tool, s.text, s.count, s.rollouts, sorted(s.per_step.items()), len(s.examples),
                   sorted(turn for _, turn in s.examples)] for s in sigs]))
"""

QUERIES = [{"q": "trying", "tool": "sub_llm"}, {"q": "silent", "tool": "run_code"}, {"q": "trying", "tool": "bash"},
           {"q": "answer", "tool": "run"}]


def _rows(run_name: str) -> dict[str, list[object]]:
    with psycopg.connect(f"{ADMIN_URL.rpartition('/')[0]}/{DB}") as conn:
        rows = conn.execute("SELECT r.uid, r.tools, r.tool_errors, r.error_sig FROM runs_rollout r JOIN runs_run u "
                            "ON u.id = r.run_id WHERE u.name = %s", [run_name]).fetchall()
    return {uid: [tools, errors, error_sig] for uid, tools, errors, error_sig in rows}


def test_a_filled_database_gets_tool_names_and_errors_on_its_rollouts(tmp_path, upgrade_db):
    previous, data = release_filled(BEFORE_FACTS, tmp_path)
    run([sys.executable, "-c", STORE, json.dumps(RECORDS), "facts"], previous, DEEPREPO_DATA_DIR=data)
    signatures_before = json.loads(run([sys.executable, "-c", SIGNATURES], previous, DEEPREPO_DATA_DIR=data))
    searches_before = json.loads(run([sys.executable, "-c", SEARCH, json.dumps(QUERIES)], previous,
                                     DEEPREPO_DATA_DIR=data).splitlines()[-1])
    assert sorted((s[1], s[2], s[3]) for s in signatures_before) == [
        ("", "TimeoutError: sandbox <id> timed out after <n>s at <str>", 1),
        ("run_code", "", 2), ("run_code", "KeyError: <str>", 1), ("run_code", "ValueError: bad <n>", 1),
        ("sub_llm", "RateLimitError: <n> from <id>", 1)], signatures_before

    out = run([sys.executable, "manage.py", "migrate", "--no-input"], REPO, DEEPREPO_DATA_DIR=data)
    assert "Applying runs.0013_rollout_tools_tool_errors" in out and "Applying runs.0014_rollout_error_sig" in out

    filled = _rows("facts")
    assert filled["f0"] == [["llm_batch", "read_file", "run_code", "sub_llm"], [
        ["run_code", 1, "ValueError: bad 42", "ValueError: bad <n>"],
        ["sub_llm", 1, "  RateLimitError: 429 from 0xdeadbeef", "RateLimitError: <n> from <id>"],
        ["run_code", 3, "KeyError: 'k'", "KeyError: <str>"]], ""]
    assert filled["f1"] == [[], [], ""]
    assert filled["f2"] == [["run_code"], [["run_code", 0, "", ""], ["run_code", 0, "", ""]], ""]
    assert filled["f3"] == [[], [], "TimeoutError: sandbox <id> timed out after <n>s at <str>"]
    assert all(v == [["run"], [], ""] for v in _rows("before-a").values())  # the release's own fill

    assert json.loads(run([sys.executable, "-c", SIGNATURES], REPO, DEEPREPO_DATA_DIR=data)) == signatures_before
    searches_after = json.loads(run([sys.executable, "-c", SEARCH, json.dumps(QUERIES)], REPO,
                                    DEEPREPO_DATA_DIR=data).splitlines()[-1])
    assert searches_after == searches_before
    assert searches_after[json.dumps(QUERIES[0])] and searches_after[json.dumps(QUERIES[1])]
    assert searches_after[json.dumps(QUERIES[2])] == []

    # What the new release writes at ingest for the same records is what the migration filled.
    run([sys.executable, "-c", STORE, json.dumps(RECORDS), "facts-new"], REPO, DEEPREPO_DATA_DIR=data)
    assert _rows("facts-new") == filled
