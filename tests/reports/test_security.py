"""Bad input and access: another project's run, a deleted run, hostile Markdown, outsiders, share links."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deeprepo_web.reports import services
from deeprepo_web.reports.models import Report
from deeprepo_web.reports.panels import PanelError
from deeprepo_web.runs.services import run_create, run_delete
from deeprepo_web.sharing.services import ShareError, share_create
from tests.reports.conftest import page_text

pytestmark = pytest.mark.django_db

HOSTILE = """# Notes
<script>alert(1)</script>
<iframe src="https://evil.example/"></iframe>
[click me](javascript:alert(2)) and [data](data:text/html;base64,PHNjcmlwdD4=)
<img src=x onerror=alert(3)>
<a href="#" onclick="alert(4)">x</a>
"""


def test_a_panel_naming_another_projects_run_is_refused(client: Any, team: Any, three: list[Any]) -> None:
    foreign, _ = run_create(project=team.other_project, name="theirs", kind="eval", status="finished")
    with pytest.raises(PanelError, match="no run"):
        services.report_create(project=team.project, user=team.editor, title="t",
                               blocks=[{"kind": "raw_summary", "params": {"run": foreign.public_id}}])
    report = services.report_create(project=team.project, user=team.editor, title="t")
    client.force_login(team.editor)
    for kind, fields in (("compare", {"runs": f"{three[0].public_id},{foreign.public_id}"}),
                         ("curves", {"runs": foreign.public_id, "keys": "reward"}),
                         ("excerpt", {"run": foreign.public_id, "rollout": "1"})):
        resp = client.post(f"/p/demo/reports/{report.public_id}/blocks/", {"kind": kind, **fields},
                           HTTP_HX_REQUEST="true")
        assert "Not added: runs: no run" in page_text(resp.content.decode())
    assert report.blocks.count() == 0
    # A rollout of another run is refused too (by id, not only by run).
    other_rollout = three[0].rollouts.first()
    resp = client.post(f"/p/demo/reports/{report.public_id}/blocks/",
                       {"kind": "excerpt", "run": three[1].public_id, "rollout": str(other_rollout.pk)},
                       HTTP_HX_REQUEST="true")
    assert "no rollout" in resp.content.decode() and report.blocks.count() == 0


def test_outsiders_get_404_everywhere(client: Any, team: Any, three: list[Any]) -> None:
    report = services.report_create(project=team.project, user=team.editor, title="secret results",
                                    blocks=[{"kind": "raw_summary", "params": {"run": three[1].public_id}}])
    services.report_publish(report=report, user=team.editor)
    client.force_login(team.outsider)
    base = f"/p/demo/reports/{report.public_id}/"
    for url in ("/p/demo/reports/", base, base + "published/", base + "versions/", base + "versions/1/",
                base + "export.md"):
        assert client.get(url).status_code == 404, url
    assert client.post(base + "publish/").status_code == 404
    # The report's id under another project's slug is no way in either.
    client.force_login(team.outsider)
    assert client.get(f"/p/other/reports/{report.public_id}/").status_code == 404


def test_a_deleted_runs_panel_says_so(client: Any, team: Any, three: list[Any]) -> None:
    report = services.report_create(project=team.project, user=team.editor, title="t", blocks=[
        {"kind": "raw_summary", "params": {"run": three[0].public_id}},
        {"kind": "compare", "params": {"runs": [r.public_id for r in three]}},
        {"kind": "raw_summary", "params": {"run": three[1].public_id}},
    ])
    published = services.report_publish(report=report, user=team.editor)
    run_delete(run=three[0])
    client.force_login(team.viewer)
    resp = client.get(f"/p/demo/reports/{report.public_id}/")
    text = page_text(resp.content.decode())
    assert resp.status_code == 200
    assert text.count(f"run {three[0].public_id} was deleted") == 2  # both panels that name it
    assert "reward: avg - 0.785, std - 0.100" in text  # the others still show
    # The published version keeps what it froze.
    frozen = page_text(client.get(f"/p/demo/reports/{report.public_id}/published/").content.decode())
    assert "reward: avg - 0.551, std - 0.176" in frozen and "was deleted" not in frozen
    assert published.frozen is not None


def test_hostile_markdown_renders_inert(client: Any, team: Any, three: list[Any]) -> None:
    report = services.report_create(project=team.project, user=team.editor, title="<script>alert(5)</script>",
                                    blocks=[{"kind": "text", "text": HOSTILE}])
    services.report_publish(report=report, user=team.editor)
    client.force_login(team.editor)
    pages = [client.get(f"/p/demo/reports/{report.public_id}/").content.decode(),
             client.get(f"/p/demo/reports/{report.public_id}/published/").content.decode()]
    _, token = share_create(project=team.project, user=team.editor, kind="report", target=report.public_id)
    client.logout()
    pages.append(client.get(f"/s/{token}").content.decode())
    for html in pages:
        article = html[html.index('id="report"'):]
        # The editor's textarea holds the text escaped; nothing of it is markup anywhere.
        for bad in ("<script", "<iframe", "<img", 'href="javascript:', 'href="data:'):
            assert bad not in article.lower(), bad
        assert not re.search(r"<[a-z][^>]*\son\w+=", article, re.I)  # no event-handler attribute in any tag
        assert "&lt;script&gt;alert(5)&lt;/script&gt;" in html  # the title, escaped
        assert "Notes" in article


def test_share_link_needs_a_published_report_and_shows_only_it(client: Any, team: Any, three: list[Any]) -> None:
    report = services.report_create(project=team.project, user=team.editor, title="Before / after", blocks=[
        {"kind": "text", "text": "Draft words v1"},
        {"kind": "compare", "params": {"runs": [r.public_id for r in three]}},
    ])
    with pytest.raises(ShareError, match="publish the report first"):
        share_create(project=team.project, user=team.editor, kind="report", target=report.public_id)
    with pytest.raises(ShareError, match="no such report"):
        share_create(project=team.other_project, user=team.outsider, kind="report", target=report.public_id)
    services.report_publish(report=report, user=team.editor)
    _, token = share_create(project=team.project, user=team.editor, kind="report", target=report.public_id)
    b = report.blocks.get(kind="text")
    services.block_update(report=report, user=team.editor, uid=b.uid, version=b.version, text="Draft words v2")
    resp = client.get(f"/s/{token}")
    text = page_text(resp.content.decode())
    assert resp.status_code == 200 and resp["X-Robots-Tag"].startswith("noindex")
    assert "Draft words v1" in text and "v2" not in text  # the published version, not the draft
    assert "0.785 (σ 0.100)" in text and "Demo" not in text
    assert "/p/demo/" not in resp.content.decode()  # no way into the project
    Report.objects.filter(pk=report.pk).delete()
    assert client.get(f"/s/{token}").status_code == 404


def test_a_shared_reports_links_into_the_project_become_text_with_their_ids(
        client: Any, team: Any, three: list[Any]) -> None:
    """The draft's "Data sources" link each run page; a logged-out reader gets 404 there, so the shared
    page names the run and its id as text. Other sites' links and other share links stay links."""
    from deeprepo_web.reports.draft import report_from_comparison

    report = report_from_comparison(project=team.project, user=team.editor, ids=[r.public_id for r in three], raw={})
    other, other_token = share_create(project=team.project, user=team.editor, kind="run", target=three[2].public_id)
    rollout = three[0].rollouts.first()
    services.block_add(report=report, user=team.editor, kind="text", text=(
        f"See [the trained run's share](/s/{other_token}), [the paper](https://arxiv.org/abs/2402.03300), "
        f"[a rollout](http://testserver/p/demo/runs/{three[0].public_id}/rollouts/{rollout.pk}/) and [the project](/p/demo/)."))
    services.report_publish(report=report, user=team.editor)
    _, token = share_create(project=team.project, user=team.editor, kind="report", target=report.public_id)

    client.force_login(team.editor)  # a member's page keeps the links
    member = client.get(f"/p/demo/reports/{report.public_id}/published/").content.decode()
    assert f'href="/p/demo/runs/{three[0].public_id}/"' in member

    client.logout()
    resp = client.get(f"/s/{token}")
    html = resp.content.decode()
    assert resp.status_code == 200
    assert "/p/demo/" not in html  # no link (nor text of one) into the project
    text = re.sub(r"\s+([:,.])", r"\1", page_text(html))  # tags became spaces
    for run in three:
        assert f"{run.name}: run page ({run.public_id}), source" in text
    assert f"a rollout ({rollout.pk})" in text and "the project." in text
    assert f'href="/s/{other_token}"' in html and 'href="https://arxiv.org/abs/2402.03300"' in html
    assert client.get(f"/s/{other_token}").status_code == 200  # the link left in place opens logged out
    assert other.kind == "run"
