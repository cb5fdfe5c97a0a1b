"""Labels: editors define them and mark rollouts or turns; viewers see them; judges' marks are reviewed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from deeprepo_web.labels.models import Label, Mark, MarkStatus
from deeprepo_web.labels.services import LabelError, label_create, mark_create


def test_editor_creates_a_label_viewer_cannot(client, team):
    client.force_login(team.editor)
    res = client.post(reverse("labels", args=["demo"]), {"name": "reward-hack", "colour": "#d9480f",
                                                         "description": "edits the test"})
    assert res.status_code == 302
    assert Label.objects.get(project=team.project).name == "reward-hack"
    client.force_login(team.viewer)
    assert client.post(reverse("labels", args=["demo"]), {"name": "x", "colour": "#000000"}).status_code == 404
    assert "reward-hack" in client.get(reverse("labels", args=["demo"])).content.decode()


@pytest.mark.parametrize(("name", "colour", "message"), [
    ("", "#000000", "name:"),
    ("ok", "red", "colour:"),
    ("ok", "#00000g", "colour:"),
])
def test_bad_label_is_refused_with_the_field(team, name, colour, message):
    with pytest.raises(LabelError, match=message):
        label_create(project=team.project, name=name, colour=colour)


def test_duplicate_label_name(client, team):
    label_create(project=team.project, name="dup")
    client.force_login(team.editor)
    res = client.post(reverse("labels", args=["demo"]), {"name": "dup", "colour": "#000000"})
    assert res.status_code == 400 and "already has a label named" in res.content.decode()


def test_mark_a_turn_with_a_note_then_remove_it(client, team, corpus):
    label = label_create(project=team.project, name="gives-up", colour="#aa0000")
    rid = corpus.ids["giveup"]
    url = reverse("mark_add", args=["demo", corpus.run.public_id, rid])
    client.force_login(team.editor)
    res = client.post(url, {"label": "gives-up", "turn": "2", "note": "<b>says so</b>"})
    assert res.status_code == 302
    mark = Mark.objects.get(label=label)
    assert (mark.rollout_id, mark.turn_index, mark.created_by, mark.note) == (rid, 2, team.editor, "<b>says so</b>")
    page = client.get(reverse("trajectory", args=["demo", corpus.run.public_id, rid])).content.decode()
    assert 'href="#turn-2">turn #2</a>' in page and "&lt;b&gt;says so&lt;/b&gt;" in page
    turn2 = page[page.index('id="turn-2"'):]
    assert '>gives-up</span>' in turn2[:1500]  # the chip on the turn itself
    assert client.post(url, {"label": "gives-up", "turn": "99"}).status_code == 400  # no such turn
    client.post(reverse("mark_delete", args=["demo", mark.pk]))
    assert not Mark.objects.exists()


def test_viewer_reads_marks_but_cannot_write(client, team, corpus):
    label = label_create(project=team.project, name="gives-up")
    rid = corpus.ids["giveup"]
    mark = mark_create(label=label, rollout=corpus.run.rollouts.get(pk=rid), user=team.editor)
    client.force_login(team.viewer)
    page = client.get(reverse("trajectory", args=["demo", corpus.run.public_id, rid])).content.decode()
    assert 'data-label="gives-up"' in page and "Add label" not in page
    assert client.post(reverse("mark_add", args=["demo", corpus.run.public_id, rid]),
                       {"label": "gives-up"}).status_code == 404
    assert client.post(reverse("mark_delete", args=["demo", mark.pk])).status_code == 404
    client.force_login(team.outsider)
    assert client.post(reverse("mark_delete", args=["demo", mark.pk])).status_code == 404
    assert Mark.objects.filter(pk=mark.pk).exists()


def test_proposed_mark_is_confirmed_or_rejected(client, team, corpus):
    label = label_create(project=team.project, name="hack")
    rollout = corpus.run.rollouts.get(pk=corpus.ids["hack"])
    mark = mark_create(label=label, rollout=rollout, user=None, status=MarkStatus.PROPOSED, source="judge:1")
    client.force_login(team.editor)
    client.post(reverse("mark_review", args=["demo", mark.pk]), {"confirm": "0"})
    mark.refresh_from_db()
    assert mark.status == MarkStatus.REJECTED and mark.created_by == team.editor
    client.post(reverse("mark_review", args=["demo", mark.pk]), {"confirm": "1"})
    mark.refresh_from_db()
    assert mark.status == MarkStatus.CONFIRMED


def test_label_of_another_project_cannot_mark(team, corpus):
    foreign = label_create(project=team.other_project, name="x")
    with pytest.raises(LabelError):
        mark_create(label=foreign, rollout=corpus.run.rollouts.first(), user=team.editor)


def test_a_bad_colour_on_the_page_is_shown_beside_it_and_nothing_is_stored(client, team):
    client.force_login(team.editor)
    res = client.post(reverse("labels", args=["demo"]), {"name": "reward-hack", "colour": "red",
                                                         "description": "edits the test"})
    html = res.content.decode()
    assert res.status_code == 400
    assert '<p class="error" data-field="colour">&#x27;red&#x27; is not a colour like #d9480f</p>' in html
    assert 'value="reward-hack"' in html and 'value="edits the test"' in html  # what was typed stays
    assert not Label.objects.exists()


@pytest.mark.parametrize(("turn", "message"), [
    ("two", "turn: a turn number is a whole number (or leave it empty for the whole rollout)"),
    ("-1", "turn: a turn number is 0 or more"),
    ("99", "turn: #99 is not a turn of this rollout"),
])
def test_a_bad_turn_is_refused_and_no_mark_is_stored(client, team, corpus, turn, message):
    label_create(project=team.project, name="gives-up")
    client.force_login(team.editor)
    res = client.post(reverse("mark_add", args=["demo", corpus.run.public_id, corpus.ids["giveup"]]),
                      {"label": "gives-up", "turn": turn, "note": "see here"})
    assert res.status_code == 400 and res.content.decode() == message
    assert not Mark.objects.exists()


def test_a_review_without_a_clear_answer_changes_nothing(client, team, corpus):
    label = label_create(project=team.project, name="hack")
    rollout = corpus.run.rollouts.get(pk=corpus.ids["hack"])
    mark = mark_create(label=label, rollout=rollout, user=None, status=MarkStatus.PROPOSED, source="judge:1")
    client.force_login(team.editor)
    for data in ({}, {"confirm": "yes"}):
        res = client.post(reverse("mark_review", args=["demo", mark.pk]), data)
        assert res.status_code == 400 and res.content.decode() == "confirm: say confirm (1) or reject (0)"
    mark.refresh_from_db()
    assert mark.status == MarkStatus.PROPOSED and mark.created_by is None
