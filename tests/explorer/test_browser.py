"""In Chromium: filter the explorer without a reload, open a run, charts draw, smoothing redraws them."""

from __future__ import annotations

import os
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.explorer.conftest import reward_points

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_explorer_filter_open_run_and_charts(browser_page: Any, live_server: Any, team: Any,
                                             screenshot_dir: str) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout

    noisy = [0.1 + 0.6 * (i / 120) + (0.15 if i % 3 == 0 else -0.1) for i in range(120)]
    main, _ = run_create(project=team.project, name="grpo-main", model="qwen-8b", environment="repo-audit",
                         config={"lr": 0.001}, tags=["baseline"], status="finished")
    metrics_ingest(run=main, points=reward_points(noisy))
    rollouts_ingest(run=main, rollouts=[
        rollout(f"ex-{g}", reward=float((g + i) % 2), step=s, sample_index=i, uid=f"{s}-{g}-{i}", turns=1)
        for s in range(3) for g in range(3) for i in range(4)
    ])
    for i in range(5):
        run, _ = run_create(project=team.project, name=f"other-{i}", status="finished")
        metrics_ingest(run=run, points=reward_points([0.1 * i, 0.2 * i]))

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/")
    assert page.locator("table.runs tbody tr[data-run]").count() == 6
    page.screenshot(path=os.path.join(screenshot_dir, "explorer.png"), full_page=True)
    page.evaluate("window.__noReload = true")
    page.fill("#f-q", "grpo-main")
    expect(page.locator("table.runs tbody tr[data-run]")).to_have_count(1)
    assert page.evaluate("window.__noReload") is True  # same document: htmx swapped the table
    assert "q=grpo-main" in page.url
    assert page.locator("table.runs svg.sparkline polyline").count() == 1

    # Selecting runs builds the Compare link.
    page.check("input.run-select")
    href = page.get_attribute("#compare-link", "href") or ""
    assert href.endswith(f"/p/demo/compare/?runs={main.public_id}")

    series_requests: list[str] = []
    page.on("request", lambda r: series_requests.append(r.url) if "/series?" in r.url else None)
    page.click("text=grpo-main")
    page.wait_for_url(f"**/runs/{main.public_id}/")
    panel = page.locator('.panel[data-key="reward"]')
    page.wait_for_selector('.panel[data-key="reward"][data-drawn="1"]')
    box = panel.locator(".uplot canvas").first.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    assert any("key=reward" in u for u in series_requests)
    page.wait_for_selector('#health-grid .panel[data-drawn="1"]')

    before = panel.get_attribute("data-sum")
    page.locator("#chart-smoothing").fill("0.9")
    expect(panel).not_to_have_attribute("data-sum", before or "")
    assert page.locator("#chart-smoothing-value").text_content() == "0.90"

    page.fill("#chart-filter", "loss")
    assert panel.is_hidden() and page.locator('.panel[data-key="loss/policy"]').is_visible()
    page.fill("#chart-filter", "")
    page.screenshot(path=os.path.join(screenshot_dir, "run.png"), full_page=True)
    assert page.watched.errors == []
