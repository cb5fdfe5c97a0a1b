"""In Chromium: an admin sets the OTLP quiet period on the settings page (issue 25, item 6)."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.otlp.models import OtlpQuiet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_sets_the_quiet_period(browser_page: Any, live_server: Any, team: Any) -> None:
    page = browser_page(team.owner)
    page.goto(f"{live_server.url}/p/{team.project.slug}/settings/")
    field = page.locator("input[name=quiet_minutes]")
    assert field.input_value() == "60"  # the default, shown
    field.fill("15")
    page.locator("form:has(input[name=quiet_minutes]) button").click()
    page.wait_for_url(f"{live_server.url}/p/{team.project.slug}/settings/")
    assert page.locator("input[name=quiet_minutes]").input_value() == "15"
    assert OtlpQuiet.objects.get(project=team.project).quiet_minutes == 15
    page.locator("input[name=quiet_minutes]").scroll_into_view_if_needed()
    page.screenshot(path="/work/notes/screens/newdata/settings-otlp-quiet.png", full_page=True)
    assert page.watched.errors == []
