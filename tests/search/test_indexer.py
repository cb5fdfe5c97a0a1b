"""The indexer's windows run side by side on their own connections when there is a backlog: every row
still becomes one document with the right rollout, run and turn index, a row committed late behind
the watermark is still caught, and a window that failed is read again by the next pass."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import rollout

pytestmark = pytest.mark.django_db(transaction=True)  # worker connections see only committed rows


@pytest.fixture
def backlog(team: Any, settings: Any, monkeypatch: Any) -> Any:
    """Many windows' worth of rows (tiny windows), not yet indexed, and three index workers."""
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search import indexer

    settings.DEEPREPO_SEARCH_INDEX_WORKERS = 3
    monkeypatch.setattr(indexer, "WINDOW", 4)
    monkeypatch.setattr(indexer, "SLACK", 6)
    monkeypatch.setattr(indexer, "MIN_SPLIT", 1)
    calls: list[tuple[str, int, int]] = []
    real = indexer._window_alone

    def counted(src: str, start: int, end: int) -> int:
        calls.append((src, start, end))
        return real(src, start, end)

    monkeypatch.setattr(indexer, "_window_alone", counted)
    run, _ = run_create(project=team.project, name="backlog")
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i}", uid=f"u{i}", step=i, turns=3) for i in range(5)])
    return run, calls


def _expected(run: Any) -> set[tuple[str, int, int | None, int | None, int | None]]:
    from deeprepo_web.runs.models import Rollout, ToolCall, Turn

    rows = {("turn", t.pk, t.rollout_id, run.pk, t.index) for t in Turn.objects.filter(rollout__run=run)}
    rows |= {("call", c.pk, c.rollout_id, run.pk, c.turn.index)
             for c in ToolCall.objects.filter(rollout__run=run).select_related("turn")}
    rows |= {("rollout", r.pk, r.pk, run.pk, None) for r in Rollout.objects.filter(run=run)}
    return rows


def _stored(run: Any) -> set[tuple[str, int, int | None, int | None, int | None]]:
    from deeprepo_web.search.models import Doc

    return set(Doc.objects.filter(run_id=run.pk).values_list("src", "obj", "rollout_id", "run_id", "turn_index"))


def test_a_backlog_is_indexed_by_parallel_windows_once_each_with_its_turn(backlog):
    from deeprepo_web.runs.models import ToolCall, Turn
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Doc, Watermark

    run, calls = backlog
    expected = _expected(run)
    assert len(expected) > 50 and {r[0] for r in expected} == {"turn", "call", "rollout"}
    added = search_index_update()
    assert {src for src, _, _ in calls} >= {"turn", "call"}  # their windows ran on worker connections
    assert _stored(run) == expected  # every turn, call and rollout; a call carries its turn's index
    assert added == Doc.objects.count()  # once each (the prompts have no run)
    marks = dict(Watermark.objects.values_list("src", "last_id"))
    assert marks["turn"] == Turn.objects.latest("pk").pk and marks["call"] == ToolCall.objects.latest("pk").pk
    assert search_index_update() == 0


def test_rows_committed_late_behind_the_mark_are_caught(backlog):
    from deeprepo_web.runs.models import Turn
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Doc

    run, _ = backlog
    search_index_update()
    # As if the newest turns' transaction had committed after a later one was indexed.
    late = list(Turn.objects.filter(rollout__run=run).order_by("-pk").values_list("pk", flat=True)[:3])
    Doc.objects.filter(src="turn", obj__in=late).delete()
    assert search_index_update() == 3
    assert _stored(run) == _expected(run)


def test_a_failed_window_keeps_the_mark_and_is_read_again(backlog, monkeypatch):
    from deeprepo_web.search import indexer
    from deeprepo_web.search.models import Watermark

    run, _ = backlog
    real = indexer._window_alone

    def one_fails(src: str, start: int, end: int) -> int:
        if src == "turn" and start > 0:
            raise RuntimeError("connection lost")
        return real(src, start, end)

    monkeypatch.setattr(indexer, "_window_alone", one_fails)
    with pytest.raises(RuntimeError):
        indexer.search_index_update()
    assert not Watermark.objects.filter(src="turn").exists()  # the turns' mark did not move
    monkeypatch.setattr(indexer, "_window_alone", real)
    indexer.search_index_update()
    assert _stored(run) == _expected(run)
