"""The sweep page in Chromium, on a real TPE sweep of the demo template: charts drawn, no script
error or CSP violation, and the page's own polling stops when the sweep is done."""

from __future__ import annotations

import os
from typing import Any

import pytest
from playwright.sync_api import expect

from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.sweeps.models import SweepStatus
from deeprepo_web.sweeps.services import sweep_create
from tests.jobs.conftest import builtin, local_cluster, wait_for, work  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)


def test_tpe_sweep_page_draws_trials_and_charts(
    team: Any, local_cluster: Any, celery_worker: Any, live_server: Any,  # noqa: F811
    browser_page: Any, screenshot_dir: str,
) -> None:
    page = browser_page(team.editor)  # logged in before the trials load the machine
    page.set_default_timeout(60_000)
    cluster = cluster_save(project=team.project, cluster=local_cluster, name=local_cluster.name, kind="local",
                           settings_in={**local_cluster.settings, "deeprepo_url": live_server.url})
    sweep = sweep_create(
        project=team.project, template=builtin("demo-grpo"), cluster=cluster, user=team.editor, name="lr × seed (TPE)",
        specs={"lr": "0.001 .. 1 log", "seed": "0, 1, 2", "steps": "8", "step_sleep": "0.4",
               "examples_per_step": "4", "rollouts_per_example": "4", "no_evals": "true"},
        method="tpe", metric="reward", max_trials=8, max_parallel=2, pruner="median", warmup_steps=1,
        startup_trials=2, seed=3,
    )
    url = f"{live_server.url}/p/{team.project.slug}/sweeps/{sweep.public_id}/"
    page.goto(url)
    assert page.locator("#sweep-status").inner_text() == "running"

    def finished() -> bool:
        sweep.refresh_from_db()
        return sweep.status == SweepStatus.FINISHED

    wait_for(finished, timeout=300, what="the sweep to finish")
    # The open page polls itself (htmx) and shows the end without a reload.
    expect(page.locator("#sweep-status")).to_have_text("finished", timeout=30_000)
    assert page.locator("#sweep-trials tbody tr").count() == 8
    assert page.locator("svg.parcoords path.trial-line").count() >= 1
    assert page.locator("#sweep-best-chart svg path").count() == 2  # best so far, and each trial's value
    # The x-axis's unit is written under its tick labels, clear of them.
    axis_name = page.locator("#sweep-best-chart svg text.axis-name")
    assert axis_name.text_content() == "minutes since the sweep started"
    name_box = axis_name.bounding_box()
    tick_bottoms = [b["y"] + b["height"] for t in page.locator("#sweep-best-chart svg text.tick").all()
                    if (b := t.bounding_box()) and b["y"] > name_box["y"] - 40]
    assert tick_bottoms and max(tick_bottoms) <= name_box["y"] + 1
    page.screenshot(path=os.path.join(screenshot_dir, "sweep-page.png"), full_page=True)
    page.goto(f"{live_server.url}/p/{team.project.slug}/sweeps/new/demo-grpo/")
    page.screenshot(path=os.path.join(screenshot_dir, "sweep-form.png"), full_page=True)
    assert page.watched.errors == []
