"""In Chromium: runs overlaid on every chart with a legend toggle, zoom re-reading the exact buckets
down to the raw points (a spike's 5.0 at its step), NaN drawn as a gap with its step named."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.explorer.conftest import reward_points
from tests.factories import rollout

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = "/work/notes/screens/charts"


def _shot(page: Any, screenshot_dir: str, name: str, **kw: Any) -> None:
    page.screenshot(path=os.path.join(screenshot_dir, name), **kw)
    if os.path.isdir(SHOTS):
        page.screenshot(path=os.path.join(SHOTS, name), **kw)


def _grpo_run(team: Any, name: str, shift: float) -> Any:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name=name, status="finished", config={"lr": 0.001 + shift})
    metrics_ingest(run=run, points=reward_points([shift + 0.5 * i / 60 for i in range(60)]))
    rollouts_ingest(run=run, rollouts=[
        rollout(f"ex-{g}", reward=float((g + i + int(shift * 10)) % 2), step=s, sample_index=i, uid=f"{s}-{g}-{i}")
        for s in range(4) for g in range(3) for i in range(4)
    ])
    return run


def test_ticked_runs_overlay_every_chart_with_legend_toggle(browser_page: Any, live_server: Any, team: Any,
                                                            screenshot_dir: str) -> None:
    a = _grpo_run(team, "grpo-lr-1e-3", 0.0)
    b = _grpo_run(team, "grpo-lr-3e-3", 0.2)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/")
    page.check(f'input.run-select[value="{a.public_id}"]')
    page.check(f'input.run-select[value="{b.public_id}"]')
    page.click("#overlay-link")
    page.wait_for_url(f"**/runs/{a.public_id}/?overlay={b.public_id}")
    page.wait_for_selector('.panel[data-key="reward"][data-drawn="1"]')
    page.wait_for_selector('#health-grid .panel[data-drawn="1"]')
    page.locator('.panel[data-key="loss/policy"]').scroll_into_view_if_needed()
    page.wait_for_selector('.panel[data-key="loss/policy"][data-drawn="1"]')
    drawn = page.locator('.panel[data-drawn="1"]:not([hidden])')
    assert drawn.count() >= 5  # reward, loss/policy and GRPO health's panels
    for i in range(drawn.count()):
        expect(drawn.nth(i)).to_have_attribute("data-runs", "2")
    toggles = page.locator("#run-legend button.run-toggle")
    expect(toggles).to_have_count(2)
    # The same run keeps its colour on every page: the toggle's swatch is the line's colour.
    colour = toggles.nth(1).locator(".swatch").evaluate("e => getComputedStyle(e).backgroundColor")
    _shot(page, screenshot_dir, "overlay.png", full_page=True)
    toggles.nth(1).click()
    expect(toggles.nth(1)).to_have_attribute("aria-pressed", "false")
    for i in range(drawn.count()):
        expect(drawn.nth(i)).to_have_attribute("data-runs", "1")
    assert f"hide={b.public_id}" in page.url  # the view is in the URL: a reload keeps it
    page.reload()
    page.wait_for_selector('.panel[data-key="reward"][data-drawn="1"]')
    expect(page.locator('.panel[data-key="reward"]')).to_have_attribute("data-runs", "1")
    page.locator("#run-legend button.run-toggle").nth(1).click()
    expect(page.locator('.panel[data-key="reward"]')).to_have_attribute("data-runs", "2")
    page.goto(f"{live_server.url}/p/demo/runs/{b.public_id}/?overlay={a.public_id}")
    page.wait_for_selector("#run-legend button.run-toggle")
    same = page.locator(f'#run-legend button[data-run="{b.public_id}"] .swatch').evaluate(
        "e => getComputedStyle(e).backgroundColor")
    assert same == colour
    # The metric filter takes a regular expression and filters GRPO health too.
    page.fill("#chart-filter", "^loss|dead")
    expect(page.locator('.panel[data-key="reward"]')).to_be_hidden()
    expect(page.locator('.panel[data-key="loss/policy"]')).to_be_visible()
    expect(page.locator('#health-grid .panel[data-health="dead"]')).to_be_visible()
    expect(page.locator('#health-grid .panel[data-health="turns"]')).to_be_hidden()
    assert page.watched.errors == []


def _hover_at(page: Any, key: str, step: int) -> str:
    """Moves the mouse onto `step` of a chart and returns its hover line."""
    panel = page.locator(f'.panel[data-key="{key}"]')
    x = panel.evaluate(f"p => p._chart.plot.valToPos({step}, 'x')")
    over = panel.locator(".u-over")
    box = over.bounding_box()
    page.mouse.move(box["x"] + x, box["y"] + box["height"] / 2)
    return panel.locator(".panel-head .hover").text_content() or ""


def _drag(page: Any, key: str, start: int, end: int) -> None:
    panel = page.locator(f'.panel[data-key="{key}"]')
    box = panel.locator(".u-over").bounding_box()
    x0 = panel.evaluate(f"p => p._chart.plot.valToPos({start}, 'x')")
    x1 = panel.evaluate(f"p => p._chart.plot.valToPos({end}, 'x')")
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + x0, y)
    page.mouse.down()
    page.mouse.move(box["x"] + (x0 + x1) / 2, y)
    page.mouse.move(box["x"] + x1, y)
    page.mouse.up()


def test_zoom_into_spike_shows_its_value_at_its_step(browser_page: Any, live_server: Any, team: Any,
                                                     screenshot_dir: str) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="long-run", status="finished")
    spike = 12_345
    for start in range(0, 20_000, 5000):
        metrics_ingest(run=run, points=[
            {"step": i, "values": {"loss": 5.0 if i == spike else 1.0 + 0.05 * math.sin(i / 300)}}
            for i in range(start, start + 5000)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    panel = page.locator('.panel[data-key="loss"]')
    page.wait_for_selector('.panel[data-key="loss"][data-drawn="1"]')
    assert int(panel.get_attribute("data-resolution") or 0) > 1  # buckets, not raw points
    # Whole run: the bucket holding the spike names its max and, once asked, the step of it.
    # A bucket is drawn at its last step: the spike's bucket is the first ending at or after it.
    bucket = panel.evaluate(f"p => p._chart.sources[0].step.find(s => s >= {spike})")
    text = _hover_at(page, "loss", bucket)
    assert "max 5" in text, text
    expect(panel.locator(".hover")).to_contain_text(f"at step {spike}")
    _shot(page, screenshot_dir, "zoom-whole.png")
    _drag(page, "loss", spike - 2000, spike + 2000)
    expect(panel).to_have_attribute("data-zoomed", "1")
    page.wait_for_function("() => +document.querySelector('.panel[data-key=\"loss\"]').dataset.resolution < 25")
    _drag(page, "loss", spike - 60, spike + 60)
    expect(panel).to_have_attribute("data-resolution", "1")  # the raw points of the visible steps
    text = _hover_at(page, "loss", spike)
    assert text.startswith(f"step {spike} · 5"), text
    _shot(page, screenshot_dir, "zoom-raw.png")
    panel.locator(".u-over").dblclick()
    page.wait_for_function("() => !document.querySelector('.panel[data-key=\"loss\"]').dataset.zoomed")
    expect(panel).not_to_have_attribute("data-resolution", "1")
    assert page.watched.errors == []


def test_nan_is_a_gap_with_its_step(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="diverged", status="finished")
    values = [1.0 - i / 200 for i in range(100)]
    values[40], values[70] = math.nan, math.inf
    metrics_ingest(run=run, points=[{"step": i, "values": {"loss": v}} for i, v in enumerate(values)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.wait_for_selector('.panel[data-key="loss"][data-drawn="1"]')
    assert _hover_at(page, "loss", 40).endswith("NaN at step 40")
    assert _hover_at(page, "loss", 70).endswith("+Inf at step 70")
    assert _hover_at(page, "loss", 41).endswith("0.795")
    # The line breaks at the NaN: the point drawn there is null, its neighbours are not.
    line = page.locator('.panel[data-key="loss"]').evaluate(
        "p => { const d = p._chart.plot.data; const i = d[0].indexOf(40); return [d[1][i-1], d[1][i], d[1][i+1]]; }")
    assert line[0] is not None and line[1] is None and line[2] is not None
    _shot(page, screenshot_dir, "nan-gap.png")
    assert page.watched.errors == []


@pytest.mark.parametrize("where", ["run", "rollout", "example"])
def test_share_from_run_rollout_and_example_pages_opens_logged_out(
    browser_page: Any, live_server: Any, team: Any, screenshot_dir: str, where: str
) -> None:
    from deeprepo_web.runs.models import Rollout

    run = _grpo_run(team, "shared-grpo", 0.0)
    ro = Rollout.objects.filter(run=run).select_related("example").order_by("pk").first()
    assert ro is not None
    path = {"run": f"runs/{run.public_id}/", "rollout": f"runs/{run.public_id}/rollouts/{ro.pk}/",
            "example": f"examples/{ro.example_id}/"}[where]
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/{path}")
    page.click("summary:has-text('Share…')")
    page.fill("input[name=title]", f"Look at this {where}")
    _shot(page, screenshot_dir, f"share-{where}.png")
    page.click("button:has-text('Create read-only link')")
    url = page.input_value("#share-url")
    anon = browser_page(None)
    resp = anon.goto(url)
    assert resp is not None and resp.status == 200
    assert f"Look at this {where}" in anon.inner_text("body")
    assert "Log out" not in anon.inner_text("body")
    _shot(anon, screenshot_dir, f"shared-{where}.png", full_page=True)


def test_compare_shows_the_differing_config_key(browser_page: Any, live_server: Any, team: Any,
                                                screenshot_dir: str) -> None:
    a = _grpo_run(team, "grpo-a", 0.0)
    b = _grpo_run(team, "grpo-b", 0.2)
    for run, lr in ((a, 1e-6), (b, 3e-6)):
        run.config = {"optim": {"lr": lr, "betas": [0.9, 0.99]}, "batch_size": 64}
        run.save(update_fields=["config"])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/compare/?runs={a.public_id},{b.public_id}")
    section = page.locator("#cmp-config")
    row = section.locator("tr.differs", has_text="optim.lr")
    expect(row).to_be_visible()
    expect(row).to_contain_text("1e-06")
    expect(row).to_contain_text("3e-06")
    expect(section.locator("tr", has_text="batch_size")).to_be_hidden()  # the same in both: differences only
    section.locator("tr.differs").first.scroll_into_view_if_needed()
    _shot(page, screenshot_dir, "compare-config.png")
    page.uncheck("#config-diff-only")
    expect(section.locator("tr", has_text="batch_size")).to_be_visible()
    # Rewards per example name the example, not #1–#3.
    keys = page.locator("td.example-key").all_text_contents()
    assert sorted(k.strip() for k in keys) == ["ex-0", "ex-1", "ex-2"]
    assert page.watched.errors == []


def test_runs_table_columns_are_chosen_and_saved_per_user(browser_page: Any, live_server: Any, team: Any,
                                                          screenshot_dir: str) -> None:
    a = _grpo_run(team, "grpo-a", 0.0)
    b = _grpo_run(team, "grpo-b", 0.2)
    for run, lr in ((a, 1e-6), (b, 3e-6)):
        run.config = {"optim": {"lr": lr}, "batch_size": 64}
        run.save(update_fields=["config"])
    page = browser_page(team.viewer)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/p/demo/")
    page.click("summary:has-text('Columns')")
    for name in ("labels", "tags", "environment"):
        page.uncheck(f'.columns-pick input[name="col"][value="{name}"]')
    page.check('.columns-pick input[name="config"][value="optim.lr"]')
    page.click(".columns-pick button:has-text('Apply')")
    page.wait_for_selector("table.runs th.cfg")
    expect(page.locator("table.runs th.cfg")).to_have_text("optim.lr")
    expect(page.locator(f'tr[data-run="{b.public_id}"] td.cfg')).to_have_text("3e-06")
    expect(page.locator("table.runs th.c-labels")).to_be_hidden()
    expect(page.locator("table.runs td.c-reward").first).to_be_visible()
    # It fits a 1440 px window: no horizontal scroll hides the reward curve.
    assert page.evaluate("() => { const w = document.querySelector('#runs-table'); return w.scrollWidth <= w.clientWidth; }")
    _shot(page, screenshot_dir, "runs-columns.png")
    page.reload()
    expect(page.locator("table.runs th.cfg")).to_have_text("optim.lr")  # saved, not just this page
    other = browser_page(team.editor)
    other.goto(f"{live_server.url}/p/demo/")
    expect(other.locator("table.runs th.cfg")).to_have_count(0)  # per user
    expect(other.locator("table.runs th.c-labels")).to_be_visible()
    assert page.watched.errors == []


def test_chart_tools_log_range_outliers_export_and_url(browser_page: Any, live_server: Any, team: Any,
                                                       screenshot_dir: str) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="tools", status="finished")
    values = [1.0 + i / 100 for i in range(200)]
    values[100] = 1000.0  # one outlier squashes the rest
    metrics_ingest(run=run, points=[{"step": i, "values": {"loss": v}} for i, v in enumerate(values)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    panel = page.locator('.panel[data-key="loss"]')
    page.wait_for_selector('.panel[data-key="loss"][data-drawn="1"]')
    top = "p => p._chart.plot.scales.y.max"
    assert panel.evaluate(top) >= 1000
    panel.locator(".tool-toggle").click()
    panel.locator("label:has-text('ignore outliers') input").check()
    expect(panel).to_have_attribute("data-drawn", "1")
    assert panel.evaluate(top) < 10  # the 1st–99th percentile: the curve is readable again
    assert "clip=loss" in page.url
    panel.locator("label:has-text('ignore outliers') input").uncheck()
    panel.locator("label:has-text('log scale') input").check()
    assert panel.evaluate("p => p._chart.plot.scales.y.distr") == 3 and "log=loss" in page.url
    panel.locator('input[aria-label="y maximum"]').fill("3")
    panel.locator('input[aria-label="y maximum"]').dispatch_event("change")
    assert panel.evaluate(top) == 3
    with page.expect_download() as csv:
        panel.locator("button:has-text('CSV')").click()
    text = open(csv.value.path()).read()
    assert text.splitlines()[0] == "series,step,time,value,min,max" and "\ntools,100,,1000," in text
    with page.expect_download() as png:
        panel.locator("button:has-text('PNG')").click()
    assert open(png.value.path(), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    _shot(page, screenshot_dir, "chart-tools.png")
    page.locator("#chart-smoothing").fill("0.6")
    page.fill("#chart-filter", "lo")
    page.reload()  # the URL holds the view: smoothing, filter, log scale
    page.wait_for_selector('.panel[data-key="loss"][data-drawn="1"]')
    assert page.input_value("#chart-filter") == "lo" and page.input_value("#chart-smoothing") == "0.6"
    assert panel.evaluate("p => p._chart.plot.scales.y.distr") == 3
    assert page.watched.errors == []
