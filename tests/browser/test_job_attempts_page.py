"""The job page of a job retried after node failures, in Chromium: every attempt listed with its
cluster id, times, state and reason, while the page polls itself; the timeline names each
dispatch's job attempt; no script error or CSP violation.
Real worker, beat, Redis, local processes killed with their wrapper (lost: no exit code)."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.jobs.conftest import local_cluster, wait_for, wait_job, work  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_job_page_lists_every_attempt_of_a_retried_job(
    team: Any, local_cluster: Any, celery_worker: Any, live_server: Any,  # noqa: F811
    browser_page: Any, screenshot_dir: str, work: Path,  # noqa: F811
) -> None:
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import template_save

    page = browser_page(team.viewer)
    template = template_save(
        project=team.project, slug="flaky", name="Flaky trainer", kind="train", max_node_retries=2,
        command_template='echo "attempt $DEEPREPO_JOB_ATTEMPT"; touch {mark}.$DEEPREPO_JOB_ATTEMPT; '
                         'if [ "$DEEPREPO_JOB_ATTEMPT" -lt 3 ]; then sleep 300; fi; echo done',
        params_schema=[{"name": "mark", "type": "str"}])
    mark = work / "mark"
    job = job_launch(project=team.project, template=template, cluster=local_cluster, params={"mark": str(mark)},
                     user=team.editor, name="flaky trainer")
    page.goto(f"{live_server.url}/p/{team.project.slug}/jobs/{job.public_id}/")
    for attempt in (1, 2):
        wait_for(lambda a=attempt: Path(f"{mark}.{a}").exists(), timeout=60, what=f"attempt {attempt}")
        job = wait_job(job, "running", timeout=60)
        meta = json.loads((Path(local_cluster.settings["state_dir"]) / job.external_id / "meta.json").read_text())
        os.killpg(int(meta["pid"]), signal.SIGKILL)  # the process and its wrapper: no exit code left
        wait_for(lambda a=attempt, j=job: (j.refresh_from_db(), j.node_retries == a)[1], timeout=60, what="a retry")
    job = wait_job(job, "succeeded", timeout=90)
    # The open page follows by itself (htmx) to the end.
    expect(page.locator("#job-status")).to_have_text("succeeded", timeout=30_000)
    rows = page.locator("#job-attempts tbody tr")
    expect(rows).to_have_count(3)
    states = [rows.nth(i).locator("td").nth(5).inner_text() for i in range(3)]
    assert states == ["lost", "lost", "succeeded"]
    assert "vanished without recording an exit code" in rows.nth(0).inner_text()
    # Every ended attempt shows when it started, or says no sync saw it running (attempt 3 ends at once,
    # often between two syncs): never a bare dash, never a made-up time.
    started = page.locator("#job-attempts td.attempt-started").all_inner_texts()
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d|not seen running", s) for s in started), started
    assert page.locator("#job-node-retries").inner_text().startswith("2 of 2 used")
    # Each attempt was submitted at its first try: no "Dispatch attempts 1" beside "2 of 2 used".
    expect(page.locator(".job-facts")).not_to_contain_text("Dispatch attempts")
    assert "{#" not in page.locator("body").inner_text()  # no template comment leaked onto the page
    # The timeline tells each attempt's dispatch apart: dispatch attempts count from 1 again after
    # a node-failure retry, so the job attempt is named beside them.
    reasons = page.locator("table.events tbody tr td:nth-child(3)").all_inner_texts()
    assert [r for r in reasons if r.startswith("dispatch attempt")] == [
        "dispatch attempt 1", "dispatch attempt 1 (job attempt 2)", "dispatch attempt 1 (job attempt 3)"]
    page.screenshot(path=os.path.join(screenshot_dir, "job-attempts.png"), full_page=True)
    assert page.watched.errors == []
