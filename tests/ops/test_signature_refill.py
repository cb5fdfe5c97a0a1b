"""Runs 0019: stored error signatures that hold `<path>` are made again with today's normaliser (a
relative path was `tmp<path>`); the others are not read or written."""

from __future__ import annotations

from importlib import import_module
from types import SimpleNamespace

import pytest
from django.db import connection


def _failing(uid: str, line: str, final: str = "") -> dict:
    from tests.factories import rollout

    r = rollout("ex-sig", uid=uid, turns=1, error=final)
    r["turns"][-1]["tool_calls"] = [{"name": "run_code", "arguments": {}, "output": f"Traceback\n{line}", "is_error": True}]
    return r


@pytest.mark.django_db(transaction=True)
def test_signatures_with_a_path_are_made_again_and_the_others_left(team) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="sig-refill")
    rollouts_ingest(run=run, rollouts=[_failing("a", "FileNotFoundError: tmp/x", final="cannot open src/y.py"),
                                       _failing("b", "FileNotFoundError: data/z.csv"),
                                       _failing("c", "ValueError: bad")])
    # As the release before stored them: a relative path's first segment kept; "c" holds no path.
    with connection.cursor() as cur:
        cur.execute("UPDATE runs_rollout SET tool_errors = jsonb_build_array(jsonb_build_array(tool_errors->0->0, "
                    "tool_errors->0->1, tool_errors->0->2, split_part(tool_errors->0->>2, '/', 1) || '<path>')), "
                    "error_sig = CASE WHEN error <> '' THEN 'cannot open src<path>' ELSE '' END WHERE run_id = %s", [run.pk])
        cur.execute("UPDATE runs_rollout SET tool_errors = jsonb_set(tool_errors, '{0,3}', '\"left as it was\"') "
                    "WHERE run_id = %s AND uid = 'c'", [run.pk])
    before = dict(Rollout.objects.filter(run=run).values_list("uid", "tool_errors"))
    assert before["a"][0][3] == "FileNotFoundError: tmp<path>" and before["b"][0][3] == "FileNotFoundError: data<path>"

    migration = import_module("deeprepo_web.runs.migrations.0019_error_sig_relative_paths")
    migration.fill_again(None, SimpleNamespace(connection=connection))

    after = {r.uid: r for r in Rollout.objects.filter(run=run)}
    assert after["a"].tool_errors[0][3] == after["b"].tool_errors[0][3] == "FileNotFoundError: <path>"
    assert after["a"].error_sig == "cannot open <path>"
    assert after["c"].tool_errors[0][3] == "left as it was"  # no <path>: not read, not written
