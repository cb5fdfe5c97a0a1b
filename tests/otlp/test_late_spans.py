"""A trace sent in two requests keeps one rollout: the trajectory URL taken after the first request
opens the whole trajectory after the second, and the labels put on it in between are still there."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from deeprepo_web.labels.models import Mark
from deeprepo_web.labels.services import label_create, mark_create
from deeprepo_web.runs.models import Rollout, ToolCall, Turn
from deeprepo_web.search.indexer import search_index_update
from deeprepo_web.search.models import Doc
from deeprepo_web.sharing.services import share_create
from tests.otlp.bodies import agent_trace, body

pytestmark = pytest.mark.django_db


def _post(client: Any, key: str, spans: list[dict[str, Any]]) -> None:
    r = client.post("/v1/traces", data=body(spans), content_type="application/json",
                    headers={"Authorization": f"Bearer {key}", "x-deeprepo-run": "late"})
    assert r.status_code == 200, r.content


def _turns(rollout: Rollout) -> list[tuple[str, str]]:
    return [(t.role, t.content) for t in Turn.objects.filter(rollout=rollout).order_by("index")]


def _found(team: Any, q: str) -> list[tuple[int, int | None]]:
    from deeprepo_web.search.selectors import search_page, search_scope
    from deeprepo_web.search.spec import spec_parse

    spec = spec_parse({"q": q})
    results, _ = search_page(scope=search_scope(project=team.project, spec=spec), spec=spec)
    return [(r.rollout.pk, r.turn_index) for r in results]


def test_late_spans_keep_the_rollout_its_url_and_its_marks(client: Any, team: Any) -> None:
    spans = agent_trace()
    # First request: the first model call and the tool (with its nested agent); the last model call
    # and the root span (which ends last, so an exporter sends it last) come later.
    _post(client, team.key, spans[1:5])
    first = Rollout.objects.get(run__name="late")
    assert _turns(first) == [("user", "What is the capital of France?"), ("assistant", "")]
    url = reverse("trajectory", args=[team.project.slug, first.run.public_id, first.pk])
    client.force_login(team.owner)
    before = client.get(url).content.decode()
    assert "geo-1" not in before and "Final answer" not in before  # the root span is not there yet
    search_index_update(budget_seconds=5)
    old_turn_ids = set(Turn.objects.filter(rollout=first).values_list("pk", flat=True))
    # One document for the rollout (its turns and calls in it); the answer is not there yet.
    assert "What is the capital of France?" in Doc.objects.get(src="rollout", obj=first.pk).body
    assert Doc.objects.filter(run_id=first.run_id).count() == 1

    label = label_create(project=team.project, name="needs-review")
    mark_create(label=label, rollout=first, user=team.owner, note="whole rollout")
    mark_create(label=label, rollout=first, user=team.owner, turn_index=1, note="the tool-call turn")
    _, token = share_create(project=team.project, user=team.owner, kind="rollout", target=str(first.pk))

    _post(client, team.key, [spans[5], spans[0]])
    rollout = Rollout.objects.get(run__name="late")
    assert rollout.pk == first.pk and rollout.created_at == first.created_at
    # Rebuilt from every span: the root's RL keys, the final answer, the third turn.
    assert (rollout.step, rollout.sample_index, rollout.reward, rollout.example.key) == (7, 2, 0.5, "geo-1")
    assert rollout.final_answer == "Paris" and rollout.num_turns == 2
    assert _turns(rollout) == [("user", "What is the capital of France?"), ("assistant", ""), ("assistant", "Paris")]
    assert ToolCall.objects.filter(rollout=rollout).count() == 3
    assert not Turn.objects.filter(pk__in=old_turn_ids).exists()

    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    # The same URL: now with the root span's example, the final answer, the last turn, the labels.
    assert "geo-1" in html and "Final answer" in html and "80 / 8" in html and "Paris is the capital." in html
    assert "needs-review" in html and "the tool-call turn" in html
    marks = sorted((m.turn_index is None, m.turn_index, m.note) for m in Mark.objects.filter(rollout=rollout))
    assert marks == [(False, 1, "the tool-call turn"), (True, None, "whole rollout")]
    # The read-only share link taken before the late spans opens the whole trajectory too.
    client.logout()
    shared = client.get(reverse("shared", args=[token]))
    assert shared.status_code == 200 and "<pre>Paris</pre>" in shared.content.decode()  # the final answer
    client.force_login(team.owner)

    # Search: the rollout's document was made again with the late spans' text, in the same request
    # (no pass of the indexer needed: it reads only rollouts it has not seen); the first hit with a turn is
    # the tool call's turn (the rollout's answer, no turn, comes first). tests/search/test_indexer.py
    # has the same with text that only the late request holds.
    assert Doc.objects.filter(run_id=rollout.run_id).count() == 1
    assert Doc.objects.get(src="rollout", obj=rollout.pk).body.rstrip().endswith("Paris")  # the answer, last
    assert _found(team, "Paris") == [(rollout.pk, 1)]
    search_index_update(budget_seconds=5)
    assert _found(team, "Paris") == [(rollout.pk, 1)] and Doc.objects.filter(run_id=rollout.run_id).count() == 1

    # The same spans again change nothing: same turn rows, same marks.
    turn_ids = set(Turn.objects.filter(rollout=rollout).values_list("pk", flat=True))
    _post(client, team.key, spans)
    assert list(Rollout.objects.filter(run__name="late").values_list("pk", flat=True)) == [first.pk]
    assert set(Turn.objects.filter(rollout=rollout).values_list("pk", flat=True)) == turn_ids
    assert Mark.objects.filter(rollout=rollout).count() == 2


def _record(*turns: tuple[str, str]) -> dict[str, Any]:
    return {"uid": "otlp-moves", "example_key": "ex-1", "turns": [{"role": r, "content": c} for r, c in turns]}


def test_turn_marks_follow_their_turn_when_a_rebuild_shifts_it(team: Any) -> None:
    # Called on the runs service directly: a shift needs a turn to appear before the others, which
    # the captured traces do not do (the root span's system prompt can, in other instrumentations).
    from deeprepo_web.runs import services as run_services
    from deeprepo_web.runs.ingest.replace import rollouts_replace

    run, _ = run_services.run_create(project=team.project, name="moves", source="otlp", external_id="moves")
    assert rollouts_replace(run=run, rollouts=[_record(("user", "q"), ("assistant", "a1"), ("assistant", "a2"))]) == 1
    rollout = Rollout.objects.get(run=run)
    good, bad = label_create(project=team.project, name="good"), label_create(project=team.project, name="bad")
    mark_create(label=good, rollout=rollout, user=team.owner, turn_index=1, note="on a1")
    mark_create(label=good, rollout=rollout, user=team.owner, turn_index=2, note="on a2")
    mark_create(label=bad, rollout=rollout, user=team.owner, turn_index=0, note="on q")

    # A system turn now comes first and a2 was rewritten: q moves to 1, a1 to 2 (onto the index a2's
    # mark is leaving), and a2's mark goes to the turn that replaced it, 3.
    rebuilt = _record(("system", "s"), ("user", "q"), ("assistant", "a1"), ("assistant", "a2 (longer)"))
    assert rollouts_replace(run=run, rollouts=[rebuilt]) == 1
    assert Rollout.objects.get(run=run).pk == rollout.pk
    marks = sorted((m.label.name, m.turn_index, m.note) for m in Mark.objects.filter(rollout=rollout))
    assert marks == [("bad", 1, "on q"), ("good", 2, "on a1"), ("good", 3, "on a2")]
    # Two turns rewritten into one: both "good" marks meet on it and the label is kept there once.
    assert rollouts_replace(run=run, rollouts=[_record(("system", "s"), ("user", "q"), ("assistant", "a"))]) == 1
    marks = sorted((m.label.name, m.turn_index, m.note) for m in Mark.objects.filter(rollout=rollout))
    assert marks == [("bad", 1, "on q"), ("good", 2, "on a1")]
