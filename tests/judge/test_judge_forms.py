"""The judge's forms: a bad value is named beside its field on the page, and nothing is stored."""

from __future__ import annotations

import pytest
from django.urls import reverse

from deeprepo_web.audit.models import Action, AuditEvent
from deeprepo_web.judge.models import JudgeEndpoint, JudgeJob
from deeprepo_web.judge.services import endpoint_save
from deeprepo_web.labels.services import label_create

pytestmark = pytest.mark.django_db


def _field_errors(html: str, field: str) -> list[str]:
    marker = f'<p class="error" data-field="{field}">'
    return [part.split("</p>")[0] for part in html.split(marker)[1:]]


def test_a_bad_price_is_shown_beside_its_field_and_nothing_is_saved(client, team):
    client.force_login(team.editor)
    res = client.post(reverse("judge", args=["demo"]), {"base_url": "https://8.8.8.8/v1", "model": "judge-m",
                                                        "input_per_mtok": "cheap", "output_per_mtok": "-1"})
    html = res.content.decode()
    assert res.status_code == 400
    assert _field_errors(html, "input_per_mtok") == ["a price is a number ≥ 0"]
    assert _field_errors(html, "output_per_mtok") == ["a price is a number ≥ 0"]
    assert 'value="https://8.8.8.8/v1"' in html and 'value="judge-m"' in html  # what was typed stays
    assert not JudgeEndpoint.objects.exists()
    assert not AuditEvent.objects.filter(action=Action.JUDGE_ENDPOINT_SAVED).exists()


def test_a_refused_url_is_shown_beside_the_field_and_the_stored_endpoint_stays(client, team):
    endpoint_save(project=team.project, base_url="https://8.8.8.8/v1", model="judge-m", api_key=None)
    client.force_login(team.editor)
    res = client.post(reverse("judge", args=["demo"]), {"base_url": "ftp://judge.example.org", "model": "other"})
    assert res.status_code == 400
    [message] = _field_errors(res.content.decode(), "base_url")
    assert message.startswith("give the endpoint&#x27;s http(s) URL")
    endpoint = JudgeEndpoint.objects.get()
    assert (endpoint.base_url, endpoint.model) == ("https://8.8.8.8/v1", "judge-m")


@pytest.mark.parametrize(("limit", "message"), [
    ("lots", "limit: a whole number of rollouts"),
    ("0", "limit: judge between 1 and 10000 rollouts"),
])
def test_a_bad_limit_does_not_start_a_job(client, team, limit, message):
    endpoint_save(project=team.project, base_url="https://8.8.8.8/v1", model="judge-m", api_key=None)
    label_create(project=team.project, name="gives-up")
    client.force_login(team.editor)
    res = client.post(reverse("judge_new", args=["demo"]), {"q": "give up", "rubric": "the agent gives up",
                                                            "label_name": "gives-up", "limit": limit})
    html = res.content.decode()
    assert res.status_code == 400
    assert "The judge did not start:" in html and f'<p class="error">{message}</p>' in html
    assert "judge-m at <code>https://8.8.8.8/v1</code>" in html  # the whole judge page, its endpoint too
    assert not JudgeJob.objects.exists()


def test_no_label_and_no_search_are_both_named(client, team):
    endpoint_save(project=team.project, base_url="https://8.8.8.8/v1", model="judge-m", api_key=None)
    client.force_login(team.editor)
    res = client.post(reverse("judge_new", args=["demo"]), {"rubric": "x", "label_name": "nope"})
    assert res.status_code == 400 and "label: pick the label a “yes” proposes" in res.content.decode()
    label_create(project=team.project, name="gives-up")
    res = client.post(reverse("judge_new", args=["demo"]), {"rubric": "x", "label_name": "gives-up"})
    assert res.status_code == 400 and "search: search or filter the rollouts first" in res.content.decode()
    assert not JudgeJob.objects.exists()
