"""Real Chromium: a value the server refuses on the labels and judge pages is named beside its field,
what the person typed is still in the form, and nothing is stored."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_refused_values_are_shown_beside_their_fields(browser_page, live_server, team, screenshot_dir):
    from deeprepo_web.judge.models import JudgeEndpoint
    from deeprepo_web.labels.models import Label
    from deeprepo_web.labels.services import label_create

    label_create(project=team.project, name="gives-up")
    page = browser_page(team.editor)

    page.goto(f"{live_server.url}/p/demo/labels/")
    page.fill("input[name=name]", "gives-up")
    page.fill("input[name=description]", "stops before the tests pass")
    page.click("form.label-form button.primary")
    error = page.locator('p.error[data-field="name"]')
    assert error.inner_text() == "the project already has a label named 'gives-up'"
    assert page.input_value("input[name=description]") == "stops before the tests pass"
    page.screenshot(path=f"{screenshot_dir}/labels-form-error.png", full_page=True)
    assert Label.objects.filter(project=team.project).count() == 1

    page.goto(f"{live_server.url}/p/demo/judge/")
    page.fill("input[name=base_url]", "http://169.254.169.254/v1")  # the cloud metadata address: refused
    page.fill("input[name=model]", "judge-m")
    page.click("form.judge-endpoint button.primary")
    error = page.locator('p.error[data-field="base_url"]')
    assert "a private, loopback or link-local address" in error.inner_text(), error.inner_text()
    assert page.input_value("input[name=model]") == "judge-m"
    page.screenshot(path=f"{screenshot_dir}/judge-endpoint-error.png", full_page=True)
    assert not JudgeEndpoint.objects.exists()
