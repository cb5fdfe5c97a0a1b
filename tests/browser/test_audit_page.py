"""The audit log page in a real browser: an admin revokes a key and changes a role on the settings
page, follows the link to the log and reads who did what; no script errors, nothing secret shown."""

from __future__ import annotations

from deeprepo_web.accounts.services import api_key_create
from deeprepo_web.runs.services import run_create, run_delete


def test_admin_reads_the_audit_log(browser_page, live_server, team, screenshot_dir):
    _, secret = api_key_create(project=team.project, user=team.owner, name="slurm jobs")
    run, _ = run_create(project=team.project, name="grpo-qwen-7b", environment="math")
    run_delete(run=run)
    login = browser_page()
    login.goto(f"{live_server.url}/login/")
    login.screenshot(path=f"{screenshot_dir}/login.png", full_page=True)
    page = browser_page(team.owner)
    page.goto(f"{live_server.url}/p/demo/settings/")
    page.fill("input[name=keep_days]", "30")
    page.click("form[action$='/settings/retention/'] button.primary")
    page.wait_for_url(f"{live_server.url}/p/demo/settings/")
    assert page.input_value("input[name=keep_days]") == "30"
    page.screenshot(path=f"{screenshot_dir}/settings.png", full_page=True)
    page.locator("tr", has_text="slurm jobs").locator("button", has_text="Revoke").click()
    page.fill("input[name=username]", "viewer")
    page.select_option("select[name=role]", "editor")
    page.click("form[action$='/settings/members/'] button.primary")
    page.click("text=Audit log")
    page.wait_for_url(f"{live_server.url}/p/demo/settings/audit/")
    rows = page.locator("table.audit tbody tr")
    first = rows.nth(0).inner_text()
    assert "owner" in first and "member added or role changed" in first and "viewer" in first and "role: editor" in first
    assert "API key revoked" in rows.nth(1).inner_text() and "slurm jobs" in rows.nth(1).inner_text()
    assert "run deleted" in page.content() and "grpo-qwen-7b" in page.content()
    assert secret not in page.content()
    assert page.watched.errors == []
    page.screenshot(path=f"{screenshot_dir}/audit-log.png", full_page=True)
    # A member who is not an admin finds no such page.
    other = browser_page(team.editor)
    assert other.goto(f"{live_server.url}/p/demo/settings/audit/").status == 404
