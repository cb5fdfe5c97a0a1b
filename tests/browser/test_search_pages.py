"""Real Chromium: search a phrase, open a result at its turn, label it, filter by the label, export the
labelled set and load it back with `datasets`; hostile text in snippets never runs."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.search.conftest import corpus  # noqa: F401  (the search corpus fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_open_label_filter_export(browser_page, live_server, team, corpus, screenshot_dir,  # noqa: F811
                                         tmp_path: Path) -> None:
    import datasets

    from deeprepo_web.labels.models import Mark

    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/labels/")
    page.fill("input[name=name]", "gives-up")
    page.fill("input[name=description]", "the agent stops trying")
    page.click("form.label-form button.primary")
    page.wait_for_selector("table.labels-table a.label-chip")
    page.screenshot(path=f"{screenshot_dir}/labels.png", full_page=True)

    page.goto(f"{live_server.url}/p/demo/search/")
    page.fill("input[name=q]", '"give up"')
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("li.search-result")
    assert page.locator("li.search-result").count() == 2
    assert page.locator("li.search-result mark").first.inner_text().lower() == "give"
    page.wait_for_selector("#search-counts table.sc-table")  # the counts load after the results
    assert page.locator("#search-counts .sc-matched").all_inner_texts() == ["1", "1"]
    page.screenshot(path=f"{screenshot_dir}/search.png", full_page=True)
    # Words in two turns of one rollout find it (one document per rollout) and the page says why no
    # snippet is shown.
    page.goto(f"{live_server.url}/p/demo/search/?q=looking+task")
    page.wait_for_selector("li.search-result")
    assert "spans several of them" in page.locator("li.search-result").first.inner_text()
    page.screenshot(path=f"{screenshot_dir}/search-spread.png", full_page=True)
    page.goto(f"{live_server.url}/p/demo/search/?q=%22give+up%22")
    page.wait_for_selector("li.search-result")

    # Open the result at its turn.
    rid = corpus.ids["giveup"]
    page.click(f"a.sr-link[href*='/rollouts/{rid}/']")
    page.wait_for_url(f"**/rollouts/{rid}/?upto=2#turn-2")
    assert page.locator("#turn-2").is_visible()
    assert page.evaluate("document.getElementById('turn-2').getBoundingClientRect().top") < 900

    # Label that turn.
    page.select_option("form.label-add select[name=label]", "gives-up")
    page.fill("form.label-add input[name=turn]", "2")
    page.fill("form.label-add input[name=note]", "stops at turn 2")
    page.click("form.label-add button")
    page.wait_for_selector(".labels-panel .label-chip[data-label='gives-up']")
    assert Mark.objects.get().turn_index == 2
    page.screenshot(path=f"{screenshot_dir}/trajectory-labels.png")

    # Filter by the label: only that rollout.
    page.goto(f"{live_server.url}/p/demo/search/")
    page.select_option("select[name=label]", "gives-up")
    page.click("form.search-form button.primary")
    page.wait_for_selector("li.search-result")
    assert page.locator("li.search-result").count() == 1

    # Export the labelled set as a datasets folder and load it back.
    with page.expect_download() as info:
        page.click("text=datasets folder (.zip)")
    archive = tmp_path / "export.zip"
    info.value.save_as(archive)
    with zipfile.ZipFile(archive) as z:
        z.extractall(tmp_path)
    ds = datasets.load_dataset(str(tmp_path / "dataset"), split="train", cache_dir=str(tmp_path / "cache"))
    assert ds["rollout_id"] == [rid]
    assert ds[0]["labels"] == ["gives-up"]

    # The run's error signatures link to the turn of an example.
    page.goto(f"{live_server.url}/p/demo/runs/{corpus.run.public_id}/errors/")
    assert "FileNotFoundError: no such file <path>" in page.locator("table.error-sigs").inner_text()
    page.screenshot(path=f"{screenshot_dir}/errors.png", full_page=True)
    page.click("table.error-sigs td a")
    page.wait_for_url(f"**/rollouts/{corpus.ids['toolerr']}/?upto=1#turn-1")
    assert page.watched.errors == []  # type: ignore[attr-defined]


def test_hostile_snippets_never_run(browser_page, live_server, team, corpus, screenshot_dir) -> None:  # noqa: F811
    from deeprepo_web.search.indexer import search_index_update
    from tests.trajectories.conftest import ingest
    from tests.trajectories.hostile import hostile_rollout

    ingest(corpus.run, [hostile_rollout("hostile-search")])
    search_index_update()
    page: Any = browser_page(team.viewer)
    for query in ("needle", "pwned", "script", "onerror"):
        for mode in ("words", "substring"):
            page.goto(f"{live_server.url}/p/demo/search/?q={query}&mode={mode}")
            page.wait_for_selector("li.search-result")
            page.wait_for_selector("#search-counts table.sc-table")
            assert page.evaluate("window.__pwned") is None, (query, mode)
    page.screenshot(path=f"{screenshot_dir}/search-hostile.png", full_page=True)
    assert page.locator(".snippet script, .snippet img, .snippet svg, .snippet iframe").count() == 0
    assert page.watched.errors == []
