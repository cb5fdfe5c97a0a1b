"""Search results page by a rollout-id cursor (newest first), both ways, by either plan (the GIN
indexes or the walk over rollouts), and the search page shows the one pager."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from deeprepo_web.search.selectors import search_page, search_results, search_scope
from deeprepo_web.search.spec import spec_parse
from tests.pager import pager_link, pager_text


@pytest.mark.parametrize("walk", [False, True])
def test_results_walk_to_the_end_and_back(team: Any, corpus: Any, monkeypatch: Any, walk: bool) -> None:
    if walk:  # one hit is "many": the plan that walks the rollouts newest first
        monkeypatch.setattr("deeprepo_web.search.selectors.WALK_AFTER_HITS", 1)
    spec = spec_parse({"q": "fix bug"})
    scope = search_scope(project=team.project, spec=spec)
    everything = [r.rollout.pk for r in search_page(scope=scope, spec=spec, per_page=100)[0]]
    assert len(everything) == 5 and everything == sorted(everything, reverse=True)
    seen, pages, cursor = [], [], ""
    while True:
        page = search_results(scope=scope, spec=spec, cursor=cursor, per_page=2)
        pages.append(page)
        seen += [r.rollout.pk for r in page.rows]
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    assert seen == everything and len(pages) == 3
    back = search_results(scope=scope, spec=spec, cursor=pages[-1].prev_cursor, per_page=2)
    assert [r.rollout.pk for r in back.rows] == everything[2:4] and back.prev_cursor and back.next_cursor


def test_search_page_pager(client: Any, team: Any, corpus: Any, monkeypatch: Any) -> None:
    client.force_login(team.viewer)
    url = reverse("search", args=["demo"])
    first = client.get(url, {"q": "fix bug"}).content.decode()
    assert pager_text(first) == ""  # five results, one page: no pager
    monkeypatch.setattr("deeprepo_web.search.views.PER_PAGE", 2)
    first = client.get(url, {"q": "fix bug"}).content.decode()
    assert '<nav class="pager" aria-label="Result pages">' in first
    assert pager_text(first) == "2 rollouts on this page Next →"
    second = client.get(pager_link(first, "next")).content.decode()
    assert pager_text(second) == "« First ← Previous 2 rollouts on this page Next →"
    assert "q=fix+bug" in pager_link(second, "next")


def test_search_api_by_cursor_and_by_old_page_numbers(api: Any, corpus: Any) -> None:
    seen, cursor = [], ""
    while True:
        body = api.get("/projects/demo/search", q="fix bug", per_page=2, **({"cursor": cursor} if cursor else {})).json()
        seen += [r["rollout_id"] for r in body["results"]]
        if not body["next_cursor"]:
            break
        cursor = body["next_cursor"]
    old = [r["rollout_id"] for n in (1, 2, 3)
           for r in api.get("/projects/demo/search", q="fix bug", per_page=2, page=n).json()["results"]]
    assert seen == old and len(set(seen)) == 5
    assert api.get("/projects/demo/search", q="fix bug", cursor="x").status_code == 400
