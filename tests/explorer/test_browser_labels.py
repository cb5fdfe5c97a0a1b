"""In Chromium: a researcher picks a label in the explorer and sees only the runs with it, and their counts."""

from __future__ import annotations

import os
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.explorer.conftest import reward_points

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_choose_a_label_in_the_explorer(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str) -> None:
    from deeprepo_web.labels.services import label_create, mark_create
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout

    gives_up = label_create(project=team.project, name="gives up", colour="#d9480f",
                            description="stops before the tests pass")
    edits = label_create(project=team.project, name="edits the test", colour="#ffd43b")
    marked = {"grpo-lr-1e-3": 5, "grpo-lr-3e-4": 2, "grpo-lr-1e-4": 0, "sft-baseline": 0}
    for n, (name, count) in enumerate(marked.items()):
        run, _ = run_create(project=team.project, name=name, model="qwen-8b", environment="repo-audit",
                            status="finished")
        metrics_ingest(run=run, points=reward_points([0.1 * n + 0.05 * s for s in range(6)]))
        rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i % 3}", reward=float(i % 2), step=0, sample_index=i,
                                                   uid=f"{n}-{i}", turns=1) for i in range(8)])
        rollouts = list(Rollout.objects.filter(run=run).order_by("id"))
        for r in rollouts[:count]:
            mark_create(label=gives_up, rollout=r, user=team.owner)
        if name != "grpo-lr-1e-3":
            mark_create(label=edits, rollout=rollouts[-1], user=team.owner)

    page = browser_page(team.viewer)  # a viewer reads labels too
    page.goto(f"{live_server.url}/p/demo/")
    rows = page.locator("table.runs tbody tr[data-run]")
    expect(rows).to_have_count(4)
    # No label chosen: every run's labels with their counts.
    expect(page.locator('tr:has-text("grpo-lr-3e-4") td.labels')).to_have_text("gives up 2 edits the test 1")
    page.screenshot(path=os.path.join(screenshot_dir, "explorer_labels_all.png"), full_page=True)
    page.evaluate("window.__noReload = true")

    page.select_option('select[name="label"]', "gives up")
    expect(rows).to_have_count(2)
    assert page.evaluate("window.__noReload") is True  # htmx swapped the table in place
    assert "label=gives%20up" in page.url
    assert rows.locator("td.name a").all_inner_texts() == ["grpo-lr-3e-4", "grpo-lr-1e-3"]
    assert [" ".join(t.split()) for t in rows.locator("td.labels").all_inner_texts()] == ["gives up 2", "gives up 5"]
    expect(page.locator("table.runs thead")).to_contain_text("Marked gives up")
    page.screenshot(path=os.path.join(screenshot_dir, "explorer_label.png"), full_page=True)

    # The count opens those rollouts: the run's rollouts table filtered by the label.
    page.locator('tr:has-text("grpo-lr-1e-3") td.labels a').click()
    page.wait_for_url("**/rollouts/?label=gives+up")
    expect(page.locator("td.tj-key")).to_have_count(5)
    assert page.watched.errors == []
