"""Real Chromium against the live server: filtering, navigation, expanding, and hostile content."""
# Lives beside the shared Chromium fixtures; the data helpers come from tests/trajectory.

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.trajectories.conftest import ingest
from tests.trajectories.hostile import hostile_rollout

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def wait_js(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll an expression (wait_for_function evals a string, which our CSP rightly refuses)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(50)


def _demo_run(team: Any) -> Any:
    """A few steps of the real demo GRPO trainer, its rollouts ingested through the service."""
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from workers.demo_grpo import TrainConfig, train

    run, _ = run_create(project=team.project, name="demo-grpo", environment="toy-repo-audit", model="toy-softmax")

    class Sink:
        def log(self, values: dict[str, Any], step: int | None = None) -> None:
            pass

        def log_rollouts(self, rollouts: list[Any]) -> None:
            rollouts_ingest(run=run, rollouts=rollouts)

        def finish(self, status: str = "finished") -> None:
            pass

    train(TrainConfig(steps=3, examples_per_step=6, rollouts_per_example=6, evals=False, train_pool=8),
          Sink(), out=lambda _line: None)
    return run


def test_filter_rollouts_open_trajectory_expand_and_group(browser_page, live_server, team, screenshot_dir):
    from deeprepo_web.runs.models import Rollout, ToolCall

    run = _demo_run(team)
    page = browser_page(team.viewer)
    base = f"{live_server.url}/p/demo/runs/{run.public_id}"
    page.goto(f"{base}/rollouts/")
    rows = page.locator("table.tj-rollouts tbody tr")
    assert rows.count() == 50
    page.screenshot(path=f"{screenshot_dir}/rollouts.png", full_page=True)

    # Filter by step and a reward floor through the form (htmx swaps the table, the URL follows).
    page.fill("input[name=step]", "2")
    page.fill("input[name=reward_min]", "0.5")
    page.press("input[name=reward_min]", "Enter")
    page.wait_for_url("**step=2**")
    expected = Rollout.objects.filter(run=run, step=2, reward__gte=0.5).count()
    assert expected > 0
    wait_js(page, f"document.querySelectorAll('table.tj-rollouts tbody tr').length === {min(expected, 50)}")
    steps = page.locator("table.tj-rollouts tbody tr td:nth-child(2)").all_inner_texts()
    assert set(steps) == {"2"}

    # Sort by reward (descending) through the column header.
    page.click("th a.sort:has-text('Reward')")
    page.wait_for_url("**sort=-reward**")
    wait_js(page, "document.getElementById('rollout-table').dataset.sort === '-reward'")
    rewards = [float(x.split()[-1]) for x in page.locator("td.tj-reward").all_inner_texts()]
    assert rewards == sorted(rewards, reverse=True)

    # Open a rollout with an llm_batch and expand a tool call's nested sub-calls.
    batch = ToolCall.objects.filter(rollout__run=run, name="llm_batch", sub_calls__isnull=False).first()
    assert batch is not None
    page.goto(f"{base}/rollouts/{batch.rollout_id}/")
    assert page.locator(f"#call-{batch.pk} ol.subcalls > li").count() == batch.sub_calls.count()
    page.screenshot(path=f"{screenshot_dir}/trajectory.png", full_page=False)
    page.locator(f"#call-{batch.pk}").scroll_into_view_if_needed()
    page.screenshot(path=f"{screenshot_dir}/trajectory_llm_batch.png", full_page=False)
    expand = page.locator("[data-expand]").first
    if expand.count():
        target = expand.get_attribute("data-expand")
        expand.click()
        assert "expanded" in (page.locator(f"#{target}").get_attribute("class") or "")

    # Groups page: pick a step, click a rollout chip, land on its trajectory.
    page.goto(f"{base}/groups/")
    page.fill("input[name=step]", "1")  # the step input (a run may have 100,000 steps: no <select>)
    page.press("input[name=step]", "Enter")
    page.wait_for_url("**step=1**")
    wait_js(page, "document.querySelector('.tj-summary').textContent.includes('Step 1')")
    page.screenshot(path=f"{screenshot_dir}/groups.png", full_page=True)
    chip = page.locator(".tj-group a.chip").first
    href = chip.get_attribute("href")
    chip.click()
    page.wait_for_url(f"**{href}")
    assert page.locator("h1").first.inner_text().startswith("Rollout")

    # Example page, then compare two of its rollouts.
    page.click(".tj-title a.tj-key")
    page.wait_for_url("**/examples/**")
    page.screenshot(path=f"{screenshot_dir}/example.png", full_page=True)
    boxes = page.locator("#compare-form input[name=r]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.click("#compare-btn")
    page.wait_for_url("**/compare/?a=*")
    assert page.locator(".cmp-heads .tj-head").count() == 2
    page.screenshot(path=f"{screenshot_dir}/compare.png", full_page=False)
    assert page.watched.errors == []


def test_hostile_rollout_runs_no_script_and_stays_usable(browser_page, live_server, team, screenshot_dir):
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="hostile")
    ids = ingest(run, [hostile_rollout()])
    page = browser_page(team.viewer)
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    width = page.viewport_size["width"]

    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/rollouts/{ids['hostile']}/")
    page.screenshot(path=f"{screenshot_dir}/hostile.png", full_page=False)
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.body.scrollWidth") <= width + 4
    # Usable: it scrolls, and a long output expands.
    page.mouse.wheel(0, 1500)
    wait_js(page, "window.scrollY > 0")
    huge = page.locator(".call:has(.fn:text-is('huge_output'))")
    huge.locator("[data-expand]").click()
    assert "expanded" in huge.locator(".out-wrap").get_attribute("class")
    # "load all" fetches the 5 MB body from the blob store; the layout still holds.
    huge.locator("button:has-text('load all')").click()
    page.wait_for_selector(".call pre.out.full")
    assert len(page.locator(".call pre.out.full").inner_text()) >= 5 * 1024 * 1024
    page.locator(".call:has(.fn:text-is('wide_output'))").scroll_into_view_if_needed()
    page.screenshot(path=f"{screenshot_dir}/hostile_loaded.png", full_page=False)
    assert page.evaluate("document.body.scrollWidth") <= width + 4
    assert page.evaluate("window.__pwned") is None

    for url in (f"/p/demo/runs/{run.public_id}/rollouts/", f"/p/demo/runs/{run.public_id}/groups/"):
        page.goto(live_server.url + url)
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.body.scrollWidth") <= width + 4
    assert not [u for u in requests if "pwned" in u or u.startswith("http://127.0.0.1:9")]
    assert not [e for e in page.watched.errors if "Content Security Policy" in e or "pwned" in e], page.watched.errors
    assert page.watched.errors == []


def test_anchor_beyond_the_first_page_loads_up_to_it(browser_page, live_server, team, screenshot_dir):
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout

    run, _ = run_create(project=team.project, name="long")
    ids = ingest(run, [rollout("long", turns=400, uid="long")])
    page = browser_page(team.viewer)
    url = f"{live_server.url}/p/demo/runs/{run.public_id}/rollouts/{ids['long']}/"
    page.goto(url + "#turn-333")
    page.wait_for_selector("#turn-333")
    wait_js(page, "Math.abs(document.getElementById('turn-333').getBoundingClientRect().top) < 40")
    assert page.locator("article.turn").count() < 400  # loaded up to the anchor, not everything
    # Scrolling to the end pulls the next page in (infinite scroll), and the link icon points at the turn.
    before = page.locator("article.turn").count()
    page.locator(".load-more a").scroll_into_view_if_needed()
    wait_js(page, f"document.querySelectorAll('article.turn').length > {before}")
    assert page.locator("#turn-333 a.anchor").get_attribute("href") == "#turn-333"
    assert page.watched.errors == []


def test_a_sort_click_while_the_table_loads_is_not_lost(browser_page, live_server, team):
    """A click on a column header while a filter request is in flight wins. Queued behind the filter
    (htmx sync "queue last"), it was dropped once the filter's swap replaced the header it came from."""
    run = _demo_run(team)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/rollouts/")
    page.fill("input[name=step]", "2")
    page.evaluate("document.querySelector('form.tj-filters').requestSubmit()")
    page.click("th a.sort:has-text('Reward')")
    page.wait_for_url("**sort=-reward**", timeout=5000)
    wait_js(page, "document.getElementById('rollout-table').dataset.sort === '-reward'")
