"""The indexer's windows run side by side on their own connections when there is a backlog: every
rollout still becomes one document (its turns and calls in turn order, its answer last) with the
right run, a rollout committed late behind the watermark is still caught, a window that failed is read
again by the next pass, and text that reaches a stored rollout later (runs.ingest.replace) is searchable
with the rest, without losing the text that stayed."""

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
    from deeprepo_web.search.models import Watermark

    settings.DEEPREPO_SEARCH_INDEX_WORKERS = 3
    monkeypatch.setattr(indexer, "WINDOW", {"rollout": 1, "prompt": 4})
    monkeypatch.setattr(indexer, "SLACK", {"rollout": 2, "prompt": 6})
    monkeypatch.setattr(indexer, "MIN_SPLIT", {"rollout": 1, "prompt": 1})
    calls: list[tuple[str, int, int]] = []
    real = indexer._window_alone

    def counted(src: str, start: int, end: int) -> int:
        calls.append((src, start, end))
        return real(src, start, end)

    monkeypatch.setattr(indexer, "_window_alone", counted)
    run, _ = run_create(project=team.project, name="backlog")
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i}", uid=f"u{i}", step=i, turns=3) for i in range(5)])
    # Ids go on across tests (transactional tests keep the sequences): the watermark starts just before
    # this run's rollouts, so the windows of one id each are about them alone.
    first = run.rollouts.order_by("pk").values_list("pk", flat=True)[0]
    Watermark.objects.update_or_create(src="rollout", defaults={"last_id": first - 1})
    example = run.rollouts.order_by("example_id").values_list("example_id", flat=True)[0]
    Watermark.objects.update_or_create(src="prompt", defaults={"last_id": example - 1})
    return run, calls


def _expected(run: Any) -> dict[tuple[str, int, int, int | None, int | None], list[str]]:
    """Each rollout's document key -> its texts in the order the document must hold them."""
    from deeprepo_web.runs.models import Rollout

    out = {}
    for r in Rollout.objects.filter(run=run):
        texts = []
        for t in r.turns.order_by("index"):
            texts.append(f"{t.content} {t.reasoning}")
            texts += [f"{c.name} " for c in t.tool_calls.order_by("id")]
            texts += [c.output for c in t.tool_calls.order_by("id")]
        texts.append(f"{r.final_answer} {r.error}")
        out[("rollout", r.pk, 0, r.pk, run.pk)] = texts
    return out


def _stored(run: Any) -> dict[tuple[str, int, int, int | None, int | None], str]:
    from deeprepo_web.search.models import Doc

    return {(d.src, d.obj, d.part, d.rollout_id, d.run_id): d.body for d in Doc.objects.filter(run_id=run.pk)}


def _in_order(body: str, texts: list[str]) -> bool:
    at = 0
    for text in texts:
        if text.strip():
            found = body.find(text, at) if text.endswith(" ") else body.find(text)
            if found < 0:
                return False
            at = max(at, found)
    return True


def _whole(run: Any) -> bool:
    expected, stored = _expected(run), _stored(run)
    return stored.keys() == expected.keys() and all(_in_order(stored[k], texts) for k, texts in expected.items())


def test_a_backlog_is_indexed_by_parallel_windows_once_each_rollout_whole(backlog):
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Doc, Watermark

    run, calls = backlog
    assert len(_expected(run)) == 5
    added = search_index_update()
    assert {src for src, _, _ in calls} >= {"rollout"}  # its windows ran on worker connections
    assert _whole(run)  # every rollout, with every turn's and call's text, in turn order
    body = _stored(run)[next(iter(_expected(run)))]
    assert body.index("Turn 0:") < body.index("def f0()") < body.index("Turn 1:") < body.index("SQL injection", body.index("Turn 1:"))
    assert added == Doc.objects.count()  # once each (the prompts have no run)
    marks = dict(Watermark.objects.values_list("src", "last_id"))
    assert marks["rollout"] == Rollout.objects.latest("pk").pk and "turn" not in marks
    assert search_index_update() == 0


def test_rollouts_committed_late_behind_the_mark_are_caught(backlog):
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Doc

    run, _ = backlog
    while search_index_update():
        pass
    # As if the newest rollout's transaction had committed after a later one was indexed.
    late = Rollout.objects.filter(run=run).latest("pk").pk
    Doc.objects.filter(src="rollout", obj=late).delete()
    assert search_index_update() == 1
    assert _whole(run)


def test_a_failed_window_keeps_the_mark_and_is_read_again(backlog, monkeypatch):
    from deeprepo_web.search import indexer
    from deeprepo_web.search.models import Watermark

    run, _ = backlog
    real = indexer._window_alone

    def one_fails(src: str, start: int, end: int) -> int:
        if src == "rollout" and start > 0:
            raise RuntimeError("connection lost")
        return real(src, start, end)

    monkeypatch.setattr(indexer, "_window_alone", one_fails)
    before = Watermark.objects.get(src="rollout").last_id
    with pytest.raises(RuntimeError):
        indexer.search_index_update()
    assert Watermark.objects.get(src="rollout").last_id == before  # the rollouts' mark did not move
    monkeypatch.setattr(indexer, "_window_alone", real)
    indexer.search_index_update()
    assert _whole(run)


def _found(team: Any, q: str, **params: str) -> list[tuple[str, int | None]]:
    from deeprepo_web.search.selectors import search_page, search_scope
    from deeprepo_web.search.spec import spec_parse

    spec = spec_parse({"q": q, **params})
    results, _ = search_page(scope=search_scope(project=team.project, spec=spec), spec=spec)
    return [(r.rollout.uid, r.turn_index) for r in results]


def test_text_that_reaches_a_stored_rollout_later_is_searched_with_the_rest(team):
    """runs.ingest.replace (OTLP spans that come late) rewrites a stored rollout's turns and calls: its
    document is made again at once, the indexer having passed it already."""
    from deeprepo_web.runs.ingest.replace import rollouts_replace
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Doc

    run, _ = run_create(project=team.project, name="growing")
    first = {"example_key": "ex-g", "uid": "g1", "step": 1,
             "turns": [{"role": "user", "content": "find the quince"},
                       {"role": "assistant", "content": "looking for a medlar first"}]}
    rollouts_ingest(run=run, rollouts=[first])
    search_index_update()
    assert _found(team, "medlar") == [("g1", 1)] and _found(team, "kumquat") == []
    grown = {**first, "final_answer": "the damson", "turns": [
        first["turns"][0], first["turns"][1],
        {"role": "assistant", "content": "then a kumquat", "tool_calls": [
            {"name": "grep", "arguments": {"pattern": "loquat"}, "output": "orchard.txt: persimmon"}]}]}
    rollouts_replace(run=run, rollouts=[grown])
    # Found before any pass of the indexer, in the turn or call that holds it; the old text stays.
    assert _found(team, "kumquat") == [("g1", 2)]
    assert _found(team, "persimmon", **{"in": "tool_output"}) == [("g1", 2)]
    assert _found(team, "damson") == [("g1", None)] and _found(team, "medlar") == [("g1", 1)]
    assert _found(team, "loquat", mode="substring") == [("g1", 2)]
    assert _found(team, "kumquat", tool="grep") == [("g1", 2)]  # the row's tool names are rewritten too
    assert search_index_update() == 0  # nothing left for the indexer
    assert Doc.objects.filter(run_id=run.pk).count() == 1
    # Text a rebuild drops is no longer found.
    rollouts_replace(run=run, rollouts=[{**first, "turns": first["turns"][:1]}])
    assert _found(team, "medlar") == [] and _found(team, "kumquat") == [] and _found(team, "quince") == [("g1", 0)]
    assert _found(team, "quince", tool="grep") == []
