"""In Chromium: a run page open while the real client logs grows its charts and GRPO health without a
reload, polls slowly when idle and stops when the run ends; the explorer re-reads running rows; the
hover cursor is shared by the charts of a page."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from playwright.sync_api import expect

import deeprepo_client
from tests.factories import rollout

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _stored_step(run_id: str, key: str = "reward") -> int | None:
    from deeprepo_web.runs.models import MetricSeries

    s = MetricSeries.objects.filter(run__public_id=run_id, key=key).first()
    return None if s is None else s.last_step


def _wait_stored(run_id: str, step: int, timeout: float = 10.0, key: str = "reward") -> None:
    end = time.monotonic() + timeout
    while (_stored_step(run_id, key) or -1) < step:
        assert time.monotonic() < end, f"the client did not deliver step {step}"
        time.sleep(0.05)


def _last_step(page: Any, key: str = "reward") -> int:
    value = page.get_attribute(f'.panel[data-key="{key}"]', "data-last-step")
    return -1 if value is None else int(value)


def test_open_run_page_grows_while_the_client_logs(browser_page: Any, live_server: Any, team: Any, tmp_path: Any,
                                                   screenshot_dir: str) -> None:
    run = deeprepo_client.init(project="demo", name="live-grpo", url=live_server.url, api_key=team.key,
                               spool_dir=tmp_path, flush_interval=0.1)
    for step in range(8):
        run.log({"reward": 0.1 + step / 20, "loss/policy": 1 - step / 20}, step=step)
    run.log({"eval/acc": 0.25}, step=5)  # one point so far: a number on the scoreboard
    _wait_stored(run.id, 7)
    _wait_stored(run.id, 5, key="eval/acc")

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.id}/")
    page.wait_for_selector('.panel[data-key="reward"][data-last-step="7"]')
    assert page.locator("#health-family").is_hidden()  # no training rollouts yet
    page.evaluate("window.__noReload = true")

    # The trainer keeps logging; every point shows on the open page, with no reload. (How fast:
    # bench/live_page.py, stored → drawn per step.)
    for step in range(8, 14):
        run.log({"reward": 0.1 + step / 20, "loss/policy": 1 - step / 20}, step=step)
        _wait_stored(run.id, step)
        page.wait_for_function(
            f'() => +(document.querySelector(\'.panel[data-key="reward"]\').dataset.lastStep) >= {step}',
            timeout=15_000)
    assert page.evaluate("window.__noReload") is True
    assert _last_step(page, "loss/policy") >= 13

    # A key that appears mid-run gets its own chart; rollouts bring GRPO health.
    run.log({"reward": 0.9, "eval/score": 0.5}, step=14)
    _wait_stored(run.id, 14)
    page.wait_for_timeout(2500)  # one point of a new key is not a curve: no chart for it yet
    assert page.locator('.panel[data-key="eval/score"]').count() == 0
    run.log({"reward": 0.95, "eval/score": 0.6}, step=15)
    run.log_rollouts([rollout(f"ex-{g}", reward=float((g + i) % 2), step=s, sample_index=i, uid=f"{s}-{g}-{i}",
                              turns=1) for s in range(3) for g in range(2) for i in range(2)])
    page.wait_for_selector('.panel[data-key="eval/score"]', timeout=10_000)
    page.locator('.panel[data-key="eval/score"]').scroll_into_view_if_needed()  # panels load when seen
    page.wait_for_selector('.panel[data-key="eval/score"][data-last-step="15"]', timeout=10_000)
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator("#health-family")).to_be_visible(timeout=15_000)
    page.wait_for_selector('#health-grid .panel[data-health="reward"][data-last-step="2"]', timeout=15_000)
    # The scoreboard's one-point metric gets a second step: its tile follows, then becomes a chart.
    tile = page.locator('#scoreboard .score[data-key="eval/acc"]')
    assert tile.locator(".value").inner_text() == "0.25"
    run.log({"eval/acc": 0.5}, step=15)
    expect(tile).to_have_count(0, timeout=10_000)
    page.locator('.panel[data-key="eval/acc"]').scroll_into_view_if_needed()
    page.wait_for_selector('.panel[data-key="eval/acc"][data-last-step="15"]', timeout=10_000)
    assert page.locator("#scoreboard").is_hidden()
    assert page.locator('details[data-family="eval"] summary .count').inner_text() == "2 charts"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=os.path.join(screenshot_dir, "run-live.png"), full_page=True)

    # The run ends: the header says so and polling stops.
    assert run.finish().ok
    expect(page.locator("#run-status .status")).to_have_text("finished", timeout=10_000)
    page.wait_for_selector("body[data-live=stopped]")
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url))
    page.wait_for_timeout(5_500)
    assert polls == []
    assert page.evaluate("window.__noReload") is True
    assert page.watched.errors == []


def test_idle_page_polls_at_most_once_per_5_seconds(browser_page: Any, live_server: Any, team: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.models import Run
    from deeprepo_web.runs.services import run_create

    quiet, _ = run_create(project=team.project, name="quiet", status="running")
    metrics_ingest(run=quiet, points=[{"step": i, "values": {"reward": i / 10}} for i in range(5)])
    Run.objects.filter(pk=quiet.pk).update(updated_at=timezone.now() - timedelta(minutes=10))

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{quiet.public_id}/")
    page.wait_for_selector('.panel[data-key="reward"][data-drawn="1"]')
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    page.wait_for_timeout(10_600)  # (not time.sleep: Playwright delivers events while it waits)
    assert page.evaluate("document.body.dataset.live") == "polling", page.watched.errors
    assert 1 <= len(seen) <= 2, seen  # ≤ 1 request per 5 s, and it does poll
    assert all("/live/" in u for u in seen)


def test_explorer_rereads_running_rows(browser_page: Any, live_server: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create, run_finish

    running, _ = run_create(project=team.project, name="still-going", status="running")
    metrics_ingest(run=running, points=[{"step": 0, "values": {"reward": 0.25}}])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/")
    row = page.locator(f'tr[data-run="{running.public_id}"]')
    expect(row.locator("td.reward")).to_have_text("0.25")
    metrics_ingest(run=running, points=[{"step": 1, "values": {"reward": 0.75}}])
    expect(row.locator("td.reward")).to_have_text("0.75", timeout=8000)
    run_finish(run=running)
    expect(row.locator(".status")).to_have_text("finished", timeout=8000)
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    page.wait_for_timeout(5_500)
    assert seen == []  # no running row left: no polling
    assert page.watched.errors == []


def test_hover_cursor_is_shared_by_the_charts(browser_page: Any, live_server: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="two-charts", status="finished")
    metrics_ingest(run=run, points=[{"step": i, "values": {"reward": i / 10, "loss/policy": 1 - i / 10}}
                                    for i in range(20)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.wait_for_selector('.panel[data-key="loss/policy"][data-drawn="1"]')
    page.wait_for_selector('.panel[data-key="reward"][data-drawn="1"]')
    over = page.locator('.panel[data-key="reward"] .u-over')
    box = over.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    hovered = page.locator('.panel[data-key="reward"] .hover')
    other = page.locator('.panel[data-key="loss/policy"] .hover')
    expect(hovered).to_contain_text("step ")
    step = (hovered.text_content() or "").split(" · ")[0]
    expect(other).to_contain_text(step)
