"""Names and numbers a researcher reads (issue 15, item 6), in Chromium: advantages without a
minus zero and taken from the group when none was logged, CRLF patches without blank lines, the
duration of an imported eval and of a sub-second one, cost "—" when tokens are unknown, and group-by
finding `lr` wherever a run's config keeps it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.factories import rollout
from tests.trajectories.conftest import ingest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CRLF_PATCH = ("diff --git a/app.py b/app.py\r\n--- a/app.py\r\n+++ b/app.py\r\n@@ -1,2 +1,2 @@\r\n"
              " import os\r\n-x = 1\r\n+x = 2\r\n")


def test_trajectory_numbers(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str) -> None:
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="no-advantages", model="m")
    ids = ingest(run, [
        rollout("ex-a", reward=1.0, uid="a0", sample_index=0, final_answer=CRLF_PATCH),
        rollout("ex-a", reward=0.0, uid="a1", sample_index=1),
        rollout("ex-a", reward=0.0, uid="a2", sample_index=2),
        rollout("ex-b", reward=0.5, uid="b0", sample_index=0, advantage=-0.001),
        rollout("ex-b", reward=0.5, uid="b1", sample_index=1, advantage=0.001),
        rollout("ex-c", reward=0.5, uid="c0", final_answer=CRLF_PATCH.replace("\r\n", "\n")),
    ])
    page = browser_page(team.viewer)
    base = f"{live_server.url}/p/demo/runs/{run.public_id}/rollouts"

    page.goto(f"{base}/{ids['a0']}/")
    stat = page.locator(".stat:has(.k:text-is('advantage')) .v").inner_text()
    assert stat.startswith("+1.41") and "group" in stat  # what the Groups tab shows, said where it came from
    crlf_height = page.locator("pre.diff").bounding_box()["height"]
    # One line box per patch line, each right under the previous: no blank line after any of them.
    boxes = [b for b in (s.bounding_box() for s in page.locator("pre.diff > span").all()) if b]
    assert len(boxes) == CRLF_PATCH.count("\r\n"), len(boxes)
    assert all(abs(nxt["y"] - (prev["y"] + prev["height"])) < 1 for prev, nxt in zip(boxes, boxes[1:], strict=False))
    assert crlf_height < (len(boxes) + 1) * boxes[0]["height"] + 20
    page.screenshot(path=f"{screenshot_dir}/trajectory-numbers.png", full_page=True)

    page.goto(f"{base}/{ids['c0']}/")
    assert page.locator("pre.diff").bounding_box()["height"] == crlf_height  # no blank line after each line
    page.goto(f"{base}/{ids['b0']}/")
    assert page.locator(".stat:has(.k:text-is('advantage')) .v").inner_text() == "0.00"  # not "-0.00"
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/groups/?step=0")
    groups = page.inner_text("main")
    assert "-0.00" not in groups and "+1.41" in groups and "−" not in groups.replace("−1", "")
    assert page.watched.errors == []


def test_run_durations_and_unknown_cost(browser_page: Any, live_server: Any, team: Any) -> None:
    from deeprepo_web.runs.services import run_create

    now = timezone.now()
    # An imported eval: finished, no end time, the files say it took 304 s.
    imported, _ = run_create(project=team.project, name="wiki-search eval", kind="eval", status="finished",
                             started_at=now - timedelta(hours=3), summary={"time_s": 304.05})
    quick, _ = run_create(project=team.project, name="step-40 eval", kind="eval", status="finished",
                          started_at=now - timedelta(seconds=1), finished_at=now - timedelta(seconds=0.84))
    ingest(imported, [rollout("q1", reward=1.0, uid="w0", input_tokens=None, output_tokens=None, turns=0),
                      rollout("q2", reward=0.0, uid="w1", input_tokens=None, output_tokens=None, turns=0)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{imported.public_id}/")
    head = page.inner_text("#run-status")
    assert "ran 5m 04s" in head, head  # not three hours and counting
    page.goto(f"{live_server.url}/p/demo/")
    row = page.locator("tr", has_text="step-40 eval").inner_text()
    assert "0.2s" in row and " 0s" not in row, row
    page.goto(f"{live_server.url}/p/demo/compare/?runs={imported.public_id},{quick.public_id}")
    cost = page.locator("tr", has_text="cost").first.inner_text()
    assert "$0" not in cost and "—" in cost, cost
    assert page.watched.errors == []


def test_group_by_a_key_wherever_the_config_keeps_it(browser_page: Any, live_server: Any, team: Any,
                                                     screenshot_dir: str) -> None:
    from deeprepo_web.runs.services import run_create

    run_create(project=team.project, name="sdk-run", config={"lr": 1e-5, "batch": 8})
    run_create(project=team.project, name="launched-job", config={"params": {"lr": 0.05, "steps": 40}})
    run_create(project=team.project, name="no-lr", config={"seed": 1})
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/?group=lr")
    headers = page.locator("tr.group-row").all_inner_texts()
    assert any("0.05" in h for h in headers) and any("0.00001" in h for h in headers), headers
    assert "params.lr" in page.inner_text(".group-paths")
    options = page.eval_on_selector_all("#group-keys option", "els => els.map(e => e.value)")
    assert {"lr", "params.lr", "params.steps", "seed", "batch"} <= set(options)
    page.goto(f"{live_server.url}/p/demo/?group=learning_rate")
    missing = page.inner_text(".group-missing")
    assert "learning_rate" in missing and "params.lr" in missing and "seed" in missing
    assert page.locator("tr.group-row").count() == 0
    page.screenshot(path=f"{screenshot_dir}/group-by-missing.png", full_page=True)
    assert page.watched.errors == []
