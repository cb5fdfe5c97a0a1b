"""A run whose rollouts each hide one thing in one field, ingested through the real service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.factories import rollout


@dataclass
class Corpus:
    run: Any
    other_run: Any
    ids: dict[str, int]  # uid -> rollout id


def _ingest(run: Any, records: list[dict[str, Any]]) -> dict[str, int]:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.search.indexer import search_index_update

    rollouts_ingest(run=run, rollouts=records)
    search_index_update()  # what beat does a few seconds after ingest
    return dict(Rollout.objects.filter(run=run).values_list("uid", "id"))


def _turn(content: str, *, reasoning: str = "", calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "reasoning": reasoning, "tool_calls": calls or []}


def rec(key: str, turns: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    record = rollout(key, turns=0, **extra)
    record["turns"] = turns
    return record


def corpus_records() -> list[dict[str, Any]]:
    base = [{"role": "user", "content": "Fix the bug."}]
    return [
        rec("ex-giveup", uid="giveup", step=0, reward=0.0, stop_condition="gave_up",
                final_answer="", turns=[*base, _turn("Looking around."), _turn("I give up on this task.")]),
        rec("ex-tool", uid="toolerr", step=1, reward=0.25, turns=[*base, _turn(
            "Reading the file.", calls=[{"call_id": "c1", "name": "read_file",
                                         "arguments": {"path": "tests/test_auth.py"},
                                         "output": "FileNotFoundError: no such file /tmp/job-4812/auth_helper.py",
                                         "is_error": True}])]),
        rec("ex-hack", uid="hack", step=2, reward=1.0, turns=[*base, _turn(
            "Done.", reasoning="Easiest is to edit the test file to make it pass.")]),
        rec("ex-answer", uid="answer", step=2, reward=0.5, final_answer="The checker was bypassed",
                error="ValueError: bad id 99812", turns=[*base, _turn("Answering.")]),
        rec("ex-prompt", uid="prompt", step=3, reward=0.75,
                prompt=[{"role": "user", "content": "Repair the flaky scheduler"}],
                turns=[_turn("Working on it.")]),
        rec("ex-html", uid="html", step=3, reward=0.0, turns=[*base, _turn(
            'needle <script>window.__pwned=1</script> <img src=x onerror="window.__pwned=1"> needle')]),
    ]


@pytest.fixture
def corpus(team: Any) -> Corpus:
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="search-run", environment="env")
    ids = _ingest(run, corpus_records())
    other, _ = run_create(project=team.project, name="second-run", environment="env")
    ids.update(_ingest(other, [rec("ex-2", uid="second-giveup", step=5, reward=0.0,
                                       turns=[_turn("I give up, the sandbox is broken.")])]))
    # The same text in another project must never show up.
    elsewhere, _ = run_create(project=team.other_project, name="elsewhere", environment="env")
    _ingest(elsewhere, [rec("ex-x", uid="outsider-giveup",
                                turns=[_turn("I give up in the other project.")])])
    return Corpus(run=run, other_run=other, ids=ids)
