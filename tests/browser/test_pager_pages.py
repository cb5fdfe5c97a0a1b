"""Real Chromium: the one pager walks the runs table and a run's rollouts through htmx (the URL keeps
the cursor, Back works), and the Groups tab's step input goes to a typed step and to the existing
steps around it."""

from __future__ import annotations

import pytest

from tests.factories import rollout

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pager_and_step_input(browser_page, live_server, team, screenshot_dir) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Run
    from deeprepo_web.runs.services import run_create

    Run.objects.bulk_create([Run(project=team.project, name=f"bulk-{i:02d}") for i in range(60)])
    run, _ = run_create(project=team.project, name="stepped")
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i % 25}", reward=(i % 3) / 2, step=s, sample_index=i // 25,
                                               uid=f"{s}-{i}", turns=0)
                                       for s in (0, 10, 20, 500) for i in range(50)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/?sort=name")
    assert page.locator("nav.pager[aria-label='Runs pages']").inner_text().split() == [
        "50", "runs", "on", "this", "page", "Next", "→"]
    page.screenshot(path=f"{screenshot_dir}/runs-table-first-page.png", full_page=True)
    page.click("nav.pager a.next")
    page.wait_for_selector("nav.pager a.prev")
    assert "cursor=" in page.url and "sort=name" in page.url
    assert page.locator("#runs-table tbody tr").count() == 11
    page.screenshot(path=f"{screenshot_dir}/runs-table-last-page.png", full_page=True)
    page.click("nav.pager a.prev")
    page.wait_for_selector("nav.pager a.next")
    assert page.locator("#runs-table tbody tr").count() == 50

    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/rollouts/")
    page.click("nav.pager[aria-label='Rollout pages'] a.next")
    page.wait_for_selector("nav.pager a.first")
    assert page.locator("#rollout-table tbody tr").count() == 50 and "cursor=" in page.url
    page.screenshot(path=f"{screenshot_dir}/rollouts-second-page.png", full_page=True)

    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/groups/")
    assert page.locator("input[name=step]").input_value() == "500"
    assert page.locator("select[name=step]").count() == 0
    page.click("a.stepnav:has-text('step 20')")
    page.wait_for_url("**/groups/?step=20")
    assert page.locator("p.tj-summary b").first.inner_text() == "20"
    page.fill("input[name=step]", "10")
    page.press("input[name=step]", "Enter")
    page.wait_for_selector("a.stepnav:has-text('← step 0')")
    assert page.locator("p.tj-summary b").first.inner_text() == "10"
    assert page.locator("a.stepnav").all_inner_texts() == ["← step 0", "step 20 →"]
    assert page.locator("section.tj-group").count() == 20
    page.click("nav.pager[aria-label='Example pages'] a.next")
    page.wait_for_selector("nav.pager a.prev")
    assert page.locator("section.tj-group").count() == 5
    page.screenshot(path=f"{screenshot_dir}/groups-step-input.png", full_page=True)
    assert page.watched.errors == []  # type: ignore[attr-defined]
