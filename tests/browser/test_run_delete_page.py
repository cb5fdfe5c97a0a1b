"""Deleting a run in a real browser: the run page's Delete… button, the confirmation naming what
goes, then the runs table without the run and a line saying it was deleted; no script errors."""

from __future__ import annotations

from deeprepo_web.runs.models import Run
from tests.explorer.test_run_deletion import _full_run


def test_editor_deletes_a_run_from_its_page(browser_page, live_server, team, screenshot_dir):
    run = _full_run(team)
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.screenshot(path=f"{screenshot_dir}/run-delete-1-run-page.png")
    page.click("#delete-run")
    page.wait_for_url(f"{live_server.url}/p/demo/runs/{run.public_id}/delete/")
    contents = page.inner_text("#delete-contents")
    assert "4 rollouts with every turn and tool call (8 model turns)" in contents and "1 label" in contents and "1 artifact" in contents
    page.screenshot(path=f"{screenshot_dir}/run-delete-2-confirm.png", full_page=True)
    page.click("#confirm-delete")
    page.wait_for_url(f"{live_server.url}/p/demo/")
    assert f"Run grpo-to-delete ({run.public_id}) deleted." in page.inner_text(".messages")
    assert page.locator(f"tr[data-run='{run.public_id}']").count() == 0
    page.screenshot(path=f"{screenshot_dir}/run-delete-3-runs-table.png")
    assert not Run.objects.filter(pk=run.pk).exists()
    assert page.watched.errors == []
