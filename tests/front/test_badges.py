"""One status badge (front/badges.py): the same markup, tone and wording wherever a state is shown."""

from __future__ import annotations

from typing import Any

import pytest
from django.template import Context, Template

from deeprepo_web.front.badges import TONES, status_badge
from deeprepo_web.runs.models import Run


def test_every_state_has_a_tone_and_says_its_name() -> None:
    for state in ("queued", "running", "requeued", "pruned", "cancelled", "failed", "succeeded", "complete",
                  "finished", "crashed", "lost", "deleting", "pending", "submitting", "cancelling", "done"):
        html = status_badge(state)
        assert html.startswith(f'<span class="status tone-{TONES[state]} status-{state}">'), html
        assert html.endswith(f"{state}</span>")
    assert "live-dot" in status_badge("running") and "live-dot" not in status_badge("queued")
    assert status_badge("no worker") == '<span class="status tone-wait status-no-worker">no worker</span>'
    assert 'class="status tone-neutral status-odd"' in status_badge("odd")  # a state nobody named yet


def test_text_title_and_id_are_escaped() -> None:
    html = status_badge("partial", '<b>done</b> · 2 problems', element_id="x", title='say "hi"')
    assert html == ('<span class="status tone-wait status-partial" id="x" title="say &quot;hi&quot;">'
                    "&lt;b&gt;done&lt;/b&gt; · 2 problems</span>")


def test_template_tags_give_the_same_badge() -> None:
    out = Template('{% load status %}{% status_badge s element_id="job-status" %}|{% run_badge run %}').render(
        Context({"s": "requeued", "run": Run(status="running", deletion_requested_at=None)}))
    assert out.split("|")[0] == status_badge("requeued", element_id="job-status")
    assert out.split("|")[1] == status_badge("running")
    deleting = Template("{% load status %}{% run_badge run %}").render(
        Context({"run": Run(status="running", deletion_requested_at="2026-01-01")}))
    assert deleting == '<span class="status tone-bad status-deleting">deleting</span>'


@pytest.mark.django_db
def test_pages_wear_the_one_badge(client: Any, team: Any) -> None:
    """The runs table (rows written in Python), the run page and the job list say a state alike."""
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="live-one", status="running")
    client.force_login(team.viewer)
    table = client.get("/p/demo/").content.decode()
    page = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    badge = str(status_badge("running"))
    assert badge in table and badge in page
    assert 'class="status status-' not in table + page  # no hand-written badge left
