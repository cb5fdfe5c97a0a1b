"""In Chromium: a run logged through the real wandb SDK shows on an open run page while it runs (a
point within 5 s), as running in the runs table, and its console output on the Logs tab."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from deeprepo_web.runs.models import MetricSeries, Run
from tests.wandb_server.sdk import sdk_env, start_script, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _stored(step: int) -> bool:
    return MetricSeries.objects.filter(run__source="wandb", key="loss", last_step__gte=step).exists()


def test_live_run_page_runs_table_and_logs_tab(browser_page: Any, live_server: Any, team: Any, tmp_path: Path,
                                              screenshot_dir: str) -> None:
    env = sdk_env(live_server.url, team.key, tmp_path)
    spec = {"id": "live0001", "project": "grpo-math", "name": "live <b>grpo</b>", "steps": 3, "print": True,
            "interactive": True, "config": {"lr": 3e-6}, "alert": "reward <b>dropped</b>"}
    proc = start_script(env, spec)
    try:
        wait_for(lambda: _stored(2), what="the first three steps")
        run = Run.objects.get(source="wandb")
        page = browser_page(team.viewer)
        page.goto(f"{live_server.url}/p/demo/")
        row = page.locator("tr", has_text="live <b>grpo</b>")
        expect(row.locator(".status")).to_contain_text("running")
        page.screenshot(path=os.path.join(screenshot_dir, "wandb-runs-table.png"), full_page=True)
        page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
        page.wait_for_selector('.panel[data-key="loss"][data-last-step="2"]')
        for step in range(3, 6):
            told = time.monotonic()
            proc.stdin.write("log\n")
            proc.stdin.flush()
            page.wait_for_function(
                f'() => +(document.querySelector(\'.panel[data-key="loss"]\').dataset.lastStep) >= {step}',
                timeout=10_000)
            # From the script's wandb.log to the open page: SDK batch (1 s here), store, the page's poll.
            assert time.monotonic() - told < 5.0, f"step {step} took too long to show"
        page.screenshot(path=os.path.join(screenshot_dir, "wandb-run-live.png"), full_page=True)
        page.click("nav.tabs >> text=Logs")
        console = page.locator("#console")
        expect(console).to_contain_text("step 5 loss 0.6")
        page.screenshot(path=os.path.join(screenshot_dir, "wandb-run-logs.png"), full_page=True)
        proc.stdin.write("finish\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and "SCRIPT-DONE" in out, err[-3000:]
    except BaseException:
        proc.kill()
        raise
    expect(page.locator("#run-logs")).to_be_attached()
    page.reload()
    expect(page.locator(".run-head .status")).to_have_text("finished")
    expect(page.locator(".run-alert")).to_contain_text("reward <b>dropped</b>")  # escaped, shown as typed
    page.screenshot(path=os.path.join(screenshot_dir, "wandb-run-logs-finished.png"), full_page=True)
    assert Run.objects.get(pk=run.pk).status == "finished"
    assert page.watched.errors == []


def test_define_metric_x_axis_is_offered_and_drawn(browser_page: Any, live_server: Any, team: Any, tmp_path: Path,
                                                   screenshot_dir: str, client: Any) -> None:
    """`wandb.define_metric("eval/*", step_metric="eval_step")`: the run page offers "defined x-axis",
    which draws eval/acc against eval_step (0..9) while loss, defining none, stays on its step."""
    from deeprepo_web.runs.models import MetricAxis
    from tests.wandb_server.sdk import run_script

    run_script(sdk_env(live_server.url, team.key, tmp_path), {"id": "axes0001", "steps": 20, "define_metric": True})
    run = Run.objects.get(source="wandb")
    assert dict(MetricAxis.objects.filter(run=run).values_list("key", "x_key")) in (
        {"eval/*": "eval_step"}, {"eval/acc": "eval_step"})  # wandb-core keeps the glob, 0.17-0.21 the key
    # The series endpoint names the x-axis and gives its values at the points' steps.
    client.force_login(team.viewer)
    got = client.get(f"/api/v1/runs/{run.public_id}/series", {"key": "eval/acc", "x": "eval_step"}).json()
    assert got["x_key"] == "eval_step" and got["x"] == list(range(10))
    assert got["value"] == [i / 100 for i in range(1, 20, 2)]
    assert client.get(f"/api/v1/runs/{run.public_id}/series", {"key": "eval/acc", "x": "nope"}).status_code == 404

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.wait_for_selector('.panel[data-key="eval/acc"][data-xaxis="step"]')
    page.select_option("#chart-x", "defined")
    page.wait_for_selector('.panel[data-key="eval/acc"][data-xaxis="eval_step"]')
    xs = page.evaluate("() => document.querySelector('.panel[data-key=\"eval/acc\"]')._chart.built.data[0]")
    assert xs == list(range(10))
    assert page.get_attribute('.panel[data-key="loss"]', "data-xaxis") == "step"
    assert "x=defined" in page.url  # the view's state is in the URL
    page.screenshot(path=os.path.join(screenshot_dir, "wandb-defined-x-axis.png"), full_page=True)
    page.reload()
    page.wait_for_selector('.panel[data-key="eval/acc"][data-xaxis="eval_step"]')
    assert page.watched.errors == []
