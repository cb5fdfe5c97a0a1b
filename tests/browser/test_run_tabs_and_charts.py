"""Smaller page fixes in Chromium: every tab of a run (Search and Errors too) wears the same header,
breadcrumbs and status badge; a constant-zero chart gets a small y-range, not 0–100; "Label all
results" comes back to the results."""

from __future__ import annotations

from deeprepo_web.labels.models import Label, Mark
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.services import run_create
from deeprepo_web.search.indexer import search_index_update
from tests.factories import rollout

TABS = ["Overview", "Rollouts", "Groups", "Checkpoints", "Search", "Errors", "Logs", "Artifacts"]


def _run(team):
    run, _ = run_create(project=team.project, name="grpo-tabs", environment="math", status="failed")
    metrics_ingest(run=run, points=[{"step": i, "values": {"loss/kl": 0.0, "reward": i / 10}} for i in range(6)])
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i}", uid=f"t{i}", sample_index=i, turns=1) for i in range(4)])
    while search_index_update(budget_seconds=5):
        pass
    return run


def test_a_constant_zero_chart_gets_a_small_range(browser_page, live_server, team, screenshot_dir):
    run = _run(team)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    panel = page.locator('.panel[data-key="loss/kl"]')
    panel.locator(".uplot").wait_for()
    panel.screenshot(path=f"{screenshot_dir}/chart-constant-zero.png")
    low, high = panel.evaluate("p => [p._chart.plot.scales.y.min, p._chart.plot.scales.y.max]")
    assert low < 0 < high and high - low <= 2, (low, high)
    assert page.watched.errors == []


def test_label_all_results_comes_back_to_the_results(browser_page, live_server, team, screenshot_dir):
    run = _run(team)
    Label.objects.create(project=team.project, name="looked-at")
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/search/?q=files&run={run.public_id}")
    results_url = page.url
    page.click("button:text-is('Label all results')")
    page.wait_for_selector(".messages")
    assert page.url == results_url
    assert "Labelled 4 more rollouts “looked-at”" in page.inner_text(".messages")
    assert page.locator("nav.tabs a.active").inner_text() == "Search"
    page.screenshot(path=f"{screenshot_dir}/search-label-all-back.png")
    assert Mark.objects.filter(run=run).count() == 4
    assert page.watched.errors == []


def test_every_run_tab_shares_the_header(browser_page, live_server, team, screenshot_dir):
    run = _run(team)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    for tab in TABS:
        page.click(f"nav.tabs a:text-is('{tab}')")
        page.wait_for_load_state()
        page.screenshot(path=f"{screenshot_dir}/run-tab-{tab.lower()}.png")
        page.wait_for_selector(f"nav.tabs a.active:text-is('{tab}')")
        head = page.locator(".run-head")
        assert head.count() == 1, tab
        assert head.locator("h1").inner_text() == "grpo-tabs", tab
        assert head.locator(".status").inner_text() == "failed", tab
        assert head.locator(".kind").inner_text() == "train", tab
        crumbs = page.locator("header.topbar").inner_text()
        assert "Demo" in crumbs and "grpo-tabs" in crumbs, tab
        if tab != "Overview":
            assert f"grpo-tabs\n/\n{tab}" in crumbs, (tab, crumbs)  # Demo / grpo-tabs / Rollouts
            assert page.locator("header.topbar a", has_text="grpo-tabs").get_attribute("href") == \
                f"/p/demo/runs/{run.public_id}/"
    assert page.watched.errors == []
