"""In Chromium: a chart's "Show numbers" button lists the values the chart draws, follows smoothing and live
points, and the keyboard reaches the skip link first."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.explorer.conftest import reward_points

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_chart_numbers_show_the_series_values(browser_page: Any, live_server: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="numbers-run", status="running")
    metrics_ingest(run=run, points=reward_points([0.125, 0.25, 0.5, 0.75]))
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")

    page.keyboard.press("Tab")  # the first stop of the keyboard is the skip link
    assert page.evaluate("document.activeElement.className") == "skip-link"
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"

    panel = page.locator('.panel[data-key="reward"]')
    expect(panel).to_have_attribute("data-drawn", "1")
    button = panel.locator("button.numbers-toggle")
    expect(button).to_have_attribute("aria-expanded", "false")
    box = page.locator("#" + button.get_attribute("aria-controls"))
    expect(box).to_be_hidden()
    expect(box.locator("table")).to_have_count(0)  # written only when asked for
    button.click()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(button).to_have_text("Hide numbers")
    table = box.locator("table.numbers")
    expect(table.locator("thead th")).to_have_text(["step", "numbers-run"])
    expect(table.locator("tbody tr")).to_have_text(["0 0.125", "1 0.25", "2 0.5", "3 0.75"], use_inner_text=True)
    assert table.locator('tbody th[scope="row"]').count() == 4

    # Smoothing changes the drawn line: the table shows the smoothed values beside the raw ones.
    page.evaluate("""() => { const s = document.getElementById('chart-smoothing');
                             s.value = '0.5'; s.dispatchEvent(new Event('input', {bubbles: true})); }""")
    expect(table.locator("thead th")).to_have_text(["step", "numbers-run", "numbers-run (raw)"])
    expect(table.locator("tbody tr").last).to_contain_text("0.75")

    # A live point lands in the open table (the run page's poll, static/js/poll.js).
    page.evaluate("""() => { const s = document.getElementById('chart-smoothing');
                             s.value = '0'; s.dispatchEvent(new Event('input', {bubbles: true})); }""")
    metrics_ingest(run=run, points=[{"step": 4, "time": 1_700_000_040.0, "values": {"reward": 0.875}}])
    expect(table.locator("tbody tr")).to_have_count(5, timeout=15_000)
    expect(table.locator("tbody tr").last).to_have_text("4 0.875", use_inner_text=True)
    assert page.watched.errors == []


def test_shared_run_chart_numbers_in_a_details(browser_page: Any, live_server: Any, team: Any) -> None:
    """Charts of the compare and share pages (compare.js) get a <details> with the same table."""
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.sharing.services import share_create

    run, _ = run_create(project=team.project, name="shared-run", status="finished")
    metrics_ingest(run=run, points=reward_points([0.125, 0.25, 0.5]))
    _, token = share_create(project=team.project, user=team.owner, kind="run", target=run.public_id)
    page = browser_page()
    page.goto(f"{live_server.url}/s/{token}")
    numbers = page.locator("#run-curve + details.chart-numbers")
    numbers.locator("summary").click()
    table = numbers.locator("table.numbers")
    expect(table.locator("thead th")).to_have_text(["step", "reward", "min", "max"])
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tbody tr").last).to_have_text("2 0.5 0.5 0.5", use_inner_text=True)
    assert page.watched.errors == []
