"""A researcher opens a run whose client had a batch refused: the banner says so, with the error line,
and the model's text in it is escaped."""

from __future__ import annotations

import os
from typing import Any

import pytest

import deeprepo_client
from tests.factories import rollout

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_run_page_shows_a_refused_batch_banner(browser_page: Any, live_server: Any, team: Any, tmp_path: Any,
                                               screenshot_dir: str) -> None:
    run = deeprepo_client.init(name="grpo-refused", url=live_server.url, api_key=team.key, spool_dir=tmp_path,
                               flush_interval=0.05)
    for step in range(50):
        run.log({"reward": step / 50, "loss": 1 - step / 50}, step=step)
    run.log_rollouts([rollout("ex-1", uid="ok-1")])
    run.log_rollouts([{"example_key": "<script>alert(1)</script>", "reward": "high", "turns": []}])
    summary = run.finish()
    assert len(summary.refused) == 1

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/{team.project.slug}/runs/{run.id}/")
    banner = page.locator("#ingest-refusals")
    assert banner.is_visible()
    text = banner.inner_text()
    assert "The server refused data sent to this run" in text and "1 batch of rollouts" in text
    assert "reward" in text  # the error line names the field
    assert page.watched.errors == []
    page.screenshot(path=os.path.join(screenshot_dir, "run_refused_banner.png"), full_page=False)
