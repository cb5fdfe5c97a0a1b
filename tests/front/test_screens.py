"""In Chromium, the three pages issue 24 item 7 changed most: the run page with a chart's numbers open, the
runs table and a job page. Each asserts what a user (or a screen reader) meets there, and saves a screenshot
under DEEPREPO_SCREENSHOTS for a person to look at."""

from __future__ import annotations

import os
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.explorer.conftest import reward_points

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_run_page_runs_table_and_job_page(browser_page: Any, live_server: Any, team: Any, tmp_path: Any,
                                          screenshot_dir: str) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import templates_for_project
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="screens-grpo", model="qwen-8b", environment="repo-audit",
                        status="running")
    metrics_ingest(run=run, points=reward_points([0.125, 0.25, 0.5, 0.75]))
    done, _ = run_create(project=team.project, name="screens-done", status="finished")
    metrics_ingest(run=done, points=reward_points([0.5, 0.625]))
    page = browser_page(team.viewer)

    # The run page: "Show numbers" of the reward chart open under its plot.
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    panel = page.locator('.panel[data-key="reward"]')
    expect(panel).to_have_attribute("data-drawn", "1")
    panel.locator("button.numbers-toggle").click()
    expect(panel.locator("table.numbers tbody tr")).to_have_count(4)
    expect(page.locator('nav.tabs a[aria-current="page"]')).to_have_text("Overview")
    expect(page.locator("#run-status .status.status-running .live-dot")).to_have_count(1)
    page.screenshot(path=os.path.join(screenshot_dir, "run-numbers.png"), full_page=True)

    # The runs table: one header cell per row cell, sortable headers say how the table is sorted.
    page.goto(f"{live_server.url}/p/demo/?sort=-started")
    header = page.locator("table.runs thead th")
    first_row = page.locator("table.runs tbody tr[data-run]").first
    assert header.count() == first_row.locator("td").count()
    expect(page.locator('table.runs th[aria-sort="descending"]')).to_have_text("Started↓")
    expect(page.locator("table.runs .status.status-finished")).to_have_text("finished")
    page.screenshot(path=os.path.join(screenshot_dir, "runs-table.png"), full_page=True)

    # A job page: its badge, its Jobs tab current, polled while it is not final. Its cluster's queue has no
    # worker (one started by another test of the session may still listen on the default queue).
    cluster = cluster_save(project=team.project, name="here", kind="local", queue="screens-no-worker",
                           settings_in={"state_dir": str(tmp_path / "jobs")})
    demo = next(t for t in templates_for_project(team.project) if t.slug == "demo-grpo")
    job = job_launch(project=team.project, template=demo, cluster=cluster, params={}, user=team.owner)
    page.goto(f"{live_server.url}/p/demo/jobs/{job.public_id}/")
    expect(page.locator("#job-status")).to_have_class("status tone-wait status-pending")
    expect(page.locator('nav.tabs a[aria-current="page"]')).to_have_text("Jobs")
    expect(page.locator("#job-live")).to_have_attribute("data-live-every", "2")
    page.screenshot(path=os.path.join(screenshot_dir, "job.png"), full_page=True)
    assert page.watched.errors == []
