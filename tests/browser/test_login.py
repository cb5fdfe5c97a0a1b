from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_then_project_page_lists_runs(browser_page, live_server, team, screenshot_dir):
    from deeprepo_web.runs.services import run_create

    run_create(project=team.project, name="grpo-<b>bold</b>", model="qwen3", tags=["baseline"])
    page = browser_page(team.viewer)
    assert "Demo" in page.inner_text("body")
    page.goto(f"{live_server.url}/p/demo/")
    page.screenshot(path=f"{screenshot_dir}/project.png", full_page=True)
    assert page.locator("text=grpo-<b>bold</b>").count() == 1  # escaped, shown as text
    assert page.watched.errors == []


def test_outsider_sees_404_for_the_project(browser_page, live_server, team):
    page = browser_page(team.outsider)
    res = page.goto(f"{live_server.url}/p/demo/")
    assert res.status == 404
