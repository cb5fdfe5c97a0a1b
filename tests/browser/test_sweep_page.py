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
    # Best so far: the best as a step line, and a dot per complete trial drawn on top of it, so a trial
    # that was a new best stays visible (a line through them hid under the best line).
    complete = sweep.trials.filter(value__isnull=False, finished_at__isnull=False).count()
    assert complete >= 1
    best_line = page.locator("#sweep-best-chart svg path")
    expect(best_line).to_have_count(1)
    assert complete == 1 or "H" in (best_line.get_attribute("d") or "")
    expect(page.locator("#sweep-best-chart svg g.dots circle")).to_have_count(complete)
    # Parallel coordinates: every axis's end labels lie above or below the band the lines run in;
    # a category's label inside an axis is drawn after the lines, over a halo.
    band = [b for a in page.locator("svg.parcoords line.axis").all() if (b := a.bounding_box())]
    top, bottom = min(b["y"] for b in band), max(b["y"] + b["height"] for b in band)
    names_top = min(b["y"] for n in page.locator("svg.parcoords text.axis-name").all() if (b := n.bounding_box()))
    ends = [b for t in page.locator("svg.parcoords text.tick:not(.inner)").all() if (b := t.bounding_box())]
    assert len(ends) == 2 * len(band)
    assert all(b["y"] + b["height"] <= top or (b["y"] >= bottom and b["y"] + b["height"] <= names_top)
               for b in ends), (top, bottom, names_top, ends)
    inner = page.locator("svg.parcoords text.tick.inner")
    expect(inner).to_have_count(1)  # seed's "1"
    assert inner.evaluate("t => getComputedStyle(t).paintOrder.startsWith('stroke') && "
                          "[...t.ownerSVGElement.querySelectorAll('.trial-line')].every("
                          "l => l.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING)")
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
