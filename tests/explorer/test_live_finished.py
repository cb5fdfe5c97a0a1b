"""In Chromium: when a run ends while its page is open, the Run card's "Finished" fills in without
a reload (issue 25, item 6)."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from playwright.sync_api import expect

import deeprepo_client

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_finished_fills_in_when_the_run_ends(browser_page: Any, live_server: Any, team: Any, tmp_path: Any) -> None:
    run = deeprepo_client.init(project="demo", name="ends-live", url=live_server.url, api_key=team.key,
                               spool_dir=tmp_path, flush_interval=0.1)
    run.log({"reward": 0.5}, step=0)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.id}/")
    expect(page.locator("#run-finished")).to_have_text("—")
    page.evaluate("window.__noReload = true")
    assert run.finish().ok
    expect(page.locator("#run-status .status")).to_have_text("finished", timeout=10_000)
    expect(page.locator("#run-finished")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d$"), timeout=10_000)
    assert page.evaluate("window.__noReload") is True
    os.makedirs("/work/notes/screens/newdata", exist_ok=True)
    page.screenshot(path="/work/notes/screens/newdata/run-finished-live.png")
    assert page.watched.errors == []
