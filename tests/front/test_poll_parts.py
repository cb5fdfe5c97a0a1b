"""In Chromium, static/js/poll.js follows every live part of a page on its own: two imports listed at once
both turn final without a reload, and each stops being polled once the server sends it back final."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DONE = {"runs": [], "problems": [], "rows": 5, "seconds": 0.5, "problems_total": 0}


def test_two_live_parts_on_one_page_both_follow_the_server(browser_page: Any, live_server: Any,
                                                           team: Any) -> None:
    from deeprepo_web.importers.models import ImportJob

    first = ImportJob.objects.create(project=team.project, source_name="first.jsonl", path="/nowhere", progress=10)
    second = ImportJob.objects.create(project=team.project, source_name="second.jsonl", path="/nowhere", progress=20)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/import/")
    parts = [page.locator(f"#import-{job.pk}") for job in (first, second)]
    for part in parts:
        expect(part).to_have_attribute("data-live-every", "1")

    # Both move while the page stays open: each part shows its own progress, then its own end.
    ImportJob.objects.filter(pk=first.pk).update(progress=1111)
    ImportJob.objects.filter(pk=second.pk).update(progress=2222)
    expect(parts[0]).to_contain_text("1,111 rows read")
    expect(parts[1]).to_contain_text("2,222 rows read")
    ImportJob.objects.filter(pk__in=[first.pk, second.pk]).update(status="done", report=DONE)
    for part in parts:
        expect(part.locator(".status.status-done")).to_have_text("done")
    expect(page.locator("[data-live-url]")).to_have_count(0)  # nothing left to poll
    assert page.watched.errors == []
