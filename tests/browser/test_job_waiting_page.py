"""The page of a job whose cluster's queue has no worker, in Chromium: the wait is an amber notice, not
the red error box a failure gets, and the page keeps polling without a script error or CSP violation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOTICE_BACKGROUND = "rgb(255, 249, 219)"  # .notice in app.css (#fff9db)
ERROR_BACKGROUND = "rgb(253, 236, 236)"  # .job-error in jobs.css (#fdecec)


def test_job_waiting_for_a_worker_shows_a_notice_not_an_error(
        browser_page: Any, live_server: Any, team: Any, screenshot_dir: str, tmp_path: Path) -> None:
    from deeprepo_web.jobs.models import Job
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import template_save

    bare = template_save(project=team.project, slug="bare", name="Bare", kind="train", command_template="true",
                         params_schema=[])
    lonely = cluster_save(project=team.project, name="lonely", kind="local", queue="polish-nobody-listens",
                          settings_in={"state_dir": str(tmp_path / "jobs")})
    job = job_launch(project=team.project, template=bare, cluster=lonely, params={}, user=team.editor,
                     name="waits for a worker")
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/{team.project.slug}/jobs/{job.public_id}/")
    notice = page.locator("#job-waiting")
    expect(notice).to_have_text("waiting for a worker on lonely (no worker listens on queue 'polish-nobody-listens')")
    assert notice.evaluate("e => getComputedStyle(e).backgroundColor") == NOTICE_BACKGROUND
    assert page.locator("#job-error").count() == 0
    expect(page.locator("#job-status")).to_have_text("pending")
    page.screenshot(path=os.path.join(screenshot_dir, "job-waiting.png"), full_page=True)

    # The same job failed: the open page's poll swaps the notice for the red box.
    Job.objects.filter(pk=job.pk).update(status="failed", error="exit code 3: out of memory")
    box = page.locator("#job-error")
    expect(box).to_have_text("exit code 3: out of memory", timeout=15_000)
    assert box.evaluate("e => getComputedStyle(e).backgroundColor") == ERROR_BACKGROUND
    assert page.locator("#job-waiting").count() == 0
    assert page.watched.errors == []
