"""Hostile model output never becomes markup: no script, handler, javascript: URL or raw control sequence."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.trajectories.conftest import ingest
from tests.trajectories.hostile import hostile_rollout

FORBIDDEN_TAGS = {"script", "iframe", "svg", "img", "style", "object", "embed", "math", "base", "meta", "link"}
TAG = re.compile(r"<([a-zA-Z][\w-]*)([^>]*)>")


def _assert_inert(html: str) -> None:
    """Every real tag in the page (escaped text has no '<') is ours or from the allowlist."""
    head, _, body = html.partition("<body")
    assert "<body" in html
    for name, attrs in TAG.findall(body):
        if name.lower() == "script":
            # Only our own same-origin files and json_script data blocks.
            assert re.fullmatch(r' src="/static/[\w./-]+" defer', attrs) or 'type="application/json"' in attrs, attrs
            continue
        assert name.lower() not in FORBIDDEN_TAGS, f"<{name}{attrs}>"
        assert not re.search(r"\son\w+\s*=", attrs, re.I), f"<{name}{attrs}>"
        assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*(javascript|data|vbscript):""", attrs, re.I), attrs
    assert "\x1b" not in body
    assert "\u202e" not in body and "\u200b" not in body


@pytest.fixture
def hostile(team, client):
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create

    client.force_login(team.viewer)
    run, _ = run_create(project=team.project, name="<script>alert(1)</script>")
    ids = ingest(run, [hostile_rollout(), {**hostile_rollout("second"), "sample_index": 1}])
    return run, ids, Rollout.objects.get(pk=ids["hostile"]).example_id


def test_trajectory_page_is_inert(client, hostile):
    run, ids, _ = hostile
    res = client.get(reverse("trajectory", args=["demo", run.public_id, ids["hostile"]]))
    html = res.content.decode()
    _assert_inert(html)
    # The payloads are visible as text, so the researcher sees what the model wrote.
    assert "&lt;script&gt;window.__pwned = 1;" in html
    assert "⟦U+202E⟧" in html and "⟦U+200B⟧" in html
    assert '<span class="ansi-f1">FAILED</span>' in html
    assert "caf\ufffd" in html
    assert "script-src 'self'" in res["Content-Security-Policy"]


def test_markdown_link_schemes_are_limited(client, team):
    from deeprepo_web.trajectories.richtext import markdown_html

    html = str(markdown_html("[a](https://example.org) [b](javascript:alert(1)) [c](data:text/html,x) "
                             "[d](vbscript:x) <https://auto.example>"))
    assert 'href="https://example.org" rel="noopener nofollow noreferrer"' in html
    assert "javascript:" not in html.replace("&lt;", "") or 'href="javascript' not in html
    assert 'href="javascript' not in html and 'href="data:' not in html and 'href="vbscript' not in html


@pytest.mark.parametrize("name", ["rollouts", "groups"])
def test_run_pages_are_inert(client, hostile, name):
    run, _, _ = hostile
    _assert_inert(client.get(reverse(name, args=["demo", run.public_id])).content.decode())


def test_example_and_compare_pages_are_inert(client, hostile):
    run, ids, example_id = hostile
    _assert_inert(client.get(reverse("example", args=["demo", example_id])).content.decode())
    url = reverse("example_compare", args=["demo", example_id])
    _assert_inert(client.get(url, {"a": ids["hostile"], "b": ids["second"]}).content.decode())


def test_blob_body_is_escaped(client, hostile):
    from deeprepo_web.runs.models import ToolCall

    run, ids, _ = hostile
    call = ToolCall.objects.get(rollout_id=ids["hostile"], name="huge_output")
    assert call.output_blob
    res = client.get(reverse("trajectory_body", args=["demo", run.public_id, ids["hostile"], "call", call.pk]))
    assert res.status_code == 200 and len(res.content) > 5 * 1024 * 1024
