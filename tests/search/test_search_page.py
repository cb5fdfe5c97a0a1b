"""The search page: access, results linking to the turn, escaped snippets, counts, bulk labels."""

from __future__ import annotations

import re

from django.db import connection
from django.urls import reverse

from deeprepo_web.labels.models import Label, Mark


def _url(**params):
    from urllib.parse import urlencode

    return f"{reverse('search', args=['demo'])}?{urlencode(params)}"


def test_outsider_gets_404(client, team, corpus):
    client.force_login(team.outsider)
    assert client.get(_url(q="give up")).status_code == 404
    assert client.get(reverse("search_counts", args=["demo"]) + "?q=give").status_code == 404
    assert client.get(reverse("search_export", args=["demo", "jsonl"]) + "?q=give").status_code == 404


def test_viewer_sees_results_linking_to_the_turn(client, team, corpus):
    client.force_login(team.viewer)
    html = client.get(_url(q="give up")).content.decode()
    rid = corpus.ids["giveup"]
    assert f'/rollouts/{rid}/?upto=2#turn-2"' in html
    assert "I <mark>give</mark> <mark>up</mark> on this task." in html
    assert "Label all results" not in html  # viewers read, editors write


def test_words_spread_over_turns_find_the_rollout_and_say_so(client, team, corpus):
    client.force_login(team.viewer)
    html = client.get(_url(q="looking task")).content.decode()  # "Looking around." then "... this task."
    assert f'/rollouts/{corpus.ids["giveup"]}/' in html
    assert "No single turn, tool call or answer of this rollout holds the whole match" in html
    html = client.get(_url(q="give up")).content.decode()  # one turn holds it: its snippet, no such line
    assert "No single turn" not in html
    html = client.get(_url(step_min="0")).content.decode()  # no text searched: a listing, nothing to locate
    assert f'/rollouts/{corpus.ids["giveup"]}/' in html and "No single turn" not in html


def test_hostile_snippet_is_escaped(client, team, corpus):
    client.force_login(team.viewer)
    html = client.get(_url(q="needle")).content.decode()
    assert "<mark>needle</mark>" in html
    assert "<script>window" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html


def test_bad_parameters_are_named_and_the_rest_runs(client, team, corpus):
    client.force_login(team.viewer)
    html = client.get(_url(q="give up", step_min="soon", mode="fuzzy")).content.decode()
    assert "step_min: &#x27;soon&#x27; is not a whole number" in html
    assert "mode: use one of" in html
    assert f"/rollouts/{corpus.ids['giveup']}/" in html


def test_bad_regex_shows_the_database_error(client, team, corpus):
    client.force_login(team.viewer)
    res = client.get(_url(q="abc(", mode="regex"))
    assert res.status_code == 200
    assert "regular expression" in res.content.decode()


def test_counts_partial_shows_each_run(client, team, corpus):
    client.force_login(team.viewer)
    html = client.get(reverse("search_counts", args=["demo"]) + "?q=give+up").content.decode()
    rows = re.findall(r'data-run="(\w+)">.*?class="num sc-matched">(\d+)<', html, re.S)
    assert dict(rows) == {corpus.run.public_id: "1", corpus.other_run.public_id: "1"}
    assert "step 0: 1 of 1 rollouts (100%)" in html
    html = client.get(reverse("search_counts", args=["demo"]) + "?q=flaky+scheduler").content.decode()
    assert corpus.other_run.public_id not in html  # no match there: no row
    html = client.get(reverse("search_counts", args=["demo"]) + "?q=zebra").content.decode()
    assert "No matches in any run." in html
    html = client.get(reverse("search_counts", args=["demo"]) + f"?q=zebra&run={corpus.run.public_id}").content.decode()
    assert "No rollout of this run matches." in html  # not "any run": one was chosen


def test_run_search_redirects_with_the_run(client, team, corpus):
    client.force_login(team.viewer)
    res = client.get(reverse("run_search", args=["demo", corpus.run.public_id]) + "?q=x")
    assert res.status_code == 302 and f"run={corpus.run.public_id}" in res["Location"]


def test_editor_bulk_labels_search_results(client, team, corpus):
    label = Label.objects.create(project=team.project, name="gives-up")
    client.force_login(team.editor)
    res = client.post(reverse("search_label", args=["demo"]), {"q": "give up", "apply_label": "gives-up",
                                                               "note": "found by search"}, follow=True)
    # Back on the same results, which say what was done.
    assert res.redirect_chain == [(_url(q="give up"), 302)]
    assert "Labelled 2 more rollouts “gives-up”" in res.content.decode()
    marked = set(Mark.objects.filter(label=label).values_list("rollout_id", flat=True))
    assert marked == {corpus.ids["giveup"], corpus.ids["second-giveup"]}
    # Filtering by the label lists exactly those.
    html = client.get(_url(label="gives-up")).content.decode()
    assert set(map(int, re.findall(r'/rollouts/(\d+)/"', html))) == marked
    # Again: nothing new.
    res = client.post(reverse("search_label", args=["demo"]), {"q": "give up", "apply_label": "gives-up"},
                      follow=True)
    assert "Labelled 0 more rollouts" in res.content.decode()


def test_viewer_cannot_bulk_label(client, team, corpus):
    Label.objects.create(project=team.project, name="gives-up")
    client.force_login(team.viewer)
    res = client.post(reverse("search_label", args=["demo"]), {"q": "give up", "apply_label": "gives-up"})
    assert res.status_code == 404
    assert not Mark.objects.exists()


def test_page_says_when_new_text_is_not_indexed_yet(client, team, corpus):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.search.indexer import search_index_update

    from .conftest import _turn, rec

    client.force_login(team.viewer)
    assert "still being indexed" not in client.get(_url(q="x")).content.decode()
    rollouts_ingest(run=corpus.run, rollouts=[rec("ex-new", uid="late", turns=[_turn("fresh")])])
    assert "1 newly logged rollout and 1 new prompt are still being indexed" in client.get(_url(q="x")).content.decode()
    search_index_update()
    assert "still being indexed" not in client.get(_url(q="fresh")).content.decode()


def test_the_indexing_notice_counts_rollouts_not_ids_and_stops_counting_at_its_cap(client, team, corpus, monkeypatch):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.search import indexer, views

    from .conftest import _turn, rec

    client.force_login(team.viewer)
    with connection.cursor() as cur:  # ids skipped by a rolled-back transaction are not rollouts waiting
        cur.execute("SELECT setval('runs_rollout_id_seq', (SELECT max(id) FROM runs_rollout) + 5)")
    rollouts_ingest(run=corpus.run, rollouts=[rec("ex-tool", uid=f"n{i}", turns=[_turn("fresh")]) for i in range(3)])
    assert "3 newly logged rollouts are still being indexed" in client.get(_url(q="x")).content.decode()
    monkeypatch.setattr(indexer, "LAG_COUNTED", 2)
    monkeypatch.setattr(views, "LAG_COUNTED", 2)
    assert "More than 2 newly logged rollouts are still being indexed" in client.get(_url(q="x")).content.decode()


def test_intro_says_where_it_searches(client, team, corpus):
    """The page with no query explains itself: the project's Search page searches every run, a run's
    Search tab only that run."""
    client.force_login(team.viewer)
    html = client.get(reverse("search", args=["demo"])).content.decode()
    assert "across every run of the project" in html and "in this run" not in html
    html = client.get(_url(run=corpus.run.public_id)).content.decode()
    assert "prompts — in this run." in html
    assert "across every run" not in html
