"""A new share link is shown whole (not cut to `…/s/K` by a narrow field) and a Copy button puts it
on the clipboard."""

from __future__ import annotations

import re

from deeprepo_web.runs.services import run_create


def test_new_share_link_is_shown_whole_and_copied(browser_page, live_server, team, screenshot_dir):
    run, _ = run_create(project=team.project, name="grpo-qwen-7b-share", environment="math")
    page = browser_page(team.editor)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.click("summary:has-text('Share…')")
    page.click("button:has-text('Create read-only link')")
    page.wait_for_selector("#share-url")
    page.screenshot(path=f"{screenshot_dir}/share-link-created.png")
    url = page.input_value("#share-url")
    assert re.fullmatch(rf"{re.escape(live_server.url)}/s/[A-Za-z0-9_-]{{43}}", url)
    # The whole link fits in the field: nothing scrolled out of sight.
    fits = page.evaluate("() => { const f = document.getElementById('share-url'); "
                         "return f.scrollWidth <= f.clientWidth; }")
    assert fits
    page.click("#share-copy")
    page.wait_for_function("() => document.getElementById('share-copy').textContent === 'Copied'")
    assert page.evaluate("() => navigator.clipboard.readText()") == url
    assert page.watched.errors == []
