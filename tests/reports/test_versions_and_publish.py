"""Versions (every save, who and when, open and restore), publishing (frozen numbers, "as of"), and
two editors saving at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from deeprepo_web.reports import services
from deeprepo_web.reports.models import Block, Report
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Rollout
from tests.compare.seed002 import rollouts_for
from tests.reports.conftest import page_text

pytestmark = pytest.mark.django_db


def _report(team: Any, three: list[Any]) -> Report:
    return services.report_create(project=team.project, user=team.editor, title="GRPO results", blocks=[
        {"kind": "text", "text": "Intro"},
        {"kind": "eval_summary", "params": {"run": three[1].public_id}},
        {"kind": "raw_summary", "params": {"run": three[1].public_id}},
    ])


def test_every_save_is_a_version_with_who_and_when_and_restore(client: Any, team: Any, three: list[Any]) -> None:
    report = _report(team, three)
    intro = report.blocks.get(kind="text")
    client.force_login(team.editor)
    url = f"/p/demo/reports/{report.public_id}/blocks/{intro.uid}/"
    resp = client.post(url, {"version": intro.version, "text": "## First findings\n\nThe 30B model delegates."},
                       HTTP_HX_REQUEST="true")
    assert resp.status_code == 200 and "Saved · v2" in resp.content.decode()
    assert "<h2>First findings</h2>" in resp.content.decode()  # the preview, swapped out of band
    client.post(f"/p/demo/reports/{report.public_id}/blocks/", {"kind": "text"}, HTTP_HX_REQUEST="true")
    client.post(f"/p/demo/reports/{report.public_id}/blocks/{intro.uid}/remove/", HTTP_HX_REQUEST="true")
    assert not report.blocks.filter(uid=intro.uid).exists()
    versions = list(report.versions.order_by("number"))
    assert [v.note for v in versions] == ["created", f"edited text {intro.uid}", "added text", "removed a block"]
    assert all(v.created_by == team.editor for v in versions)
    page = page_text(client.get(f"/p/demo/reports/{report.public_id}/versions/").content.decode())
    assert "removed a block" in page and "edited a text block" in page and "editor" in page
    # Open version 2: the removed block is there; restore it.
    v2 = page_text(client.get(f"/p/demo/reports/{report.public_id}/versions/2/").content.decode())
    assert "First findings" in v2
    client.post(f"/p/demo/reports/{report.public_id}/versions/2/restore/")
    restored = report.blocks.get(uid=intro.uid)
    assert restored.text.startswith("## First findings") and report.blocks.count() == 3
    assert report.versions.order_by("-number").first().note == "restored version 2"


def test_autosaves_while_typing_are_one_version(team: Any, three: list[Any]) -> None:
    report = _report(team, three)
    b = report.blocks.get(kind="text")
    for i in range(5):
        b = services.block_update(report=report, user=team.editor, uid=b.uid, version=b.version, text="x" * (i + 1))
    assert report.versions.count() == 2 and report.versions.get(number=2).blocks[0]["text"] == "xxxxx"
    services.block_update(report=report, user=team.owner, uid=b.uid, version=b.version, text="owner's")
    assert report.versions.count() == 3  # another editor: a version of its own


def test_publish_freezes_numbers_and_draft_stays_live(client: Any, team: Any, three: list[Any]) -> None:
    report = _report(team, three)
    client.force_login(team.editor)
    assert client.post(f"/p/demo/reports/{report.public_id}/publish/").status_code == 302
    report.refresh_from_db()
    assert report.published is not None and report.published.as_of is not None
    frozen = page_text(client.get(f"/p/demo/reports/{report.public_id}/published/").content.decode())
    assert "0.785" in frozen and "data as of" in frozen
    # New rollouts arrive: the draft moves, the published version does not.
    extra = rollouts_for({"model": "late", "rewards": [0.0] * 6, "turns": [30] * 6, "input": [1] * 6,
                          "output": [1] * 6, "delegates": [True] * 6})
    rollouts_ingest(run=three[1], rollouts=extra)
    draft = page_text(client.get(f"/p/demo/reports/{report.public_id}/").content.decode())
    assert "reward: avg - 0.393" in draft  # 12 rollouts now
    with_queries: list[str] = []
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        again = page_text(client.get(f"/p/demo/reports/{report.public_id}/published/").content.decode())
        with_queries = [q["sql"] for q in ctx.captured_queries]
    assert "reward: avg - 0.785, std - 0.100" in again and "0.393" not in again
    assert not any("runs_rollout" in q for q in with_queries)  # frozen data is read, never recomputed
    md = client.get(f"/p/demo/reports/{report.public_id}/export.md").content.decode()
    assert "reward: avg - 0.785, std - 0.100" in md and "Data as of" in md
    pdf = client.get(f"/p/demo/reports/{report.public_id}/export.pdf")
    assert pdf["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF-")


@pytest.mark.django_db(transaction=True)
def test_two_editors_saving_at_once_lose_nothing(team: Any, three: list[Any]) -> None:
    report = _report(team, three)
    blocks = list(report.blocks.order_by("position"))
    text, panel = blocks[0], blocks[1]
    # Different blocks, same moment (threads, real transactions): both land, the last version holds both.
    errors: list[BaseException] = []

    def save(fn: Any) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    jobs = [
        lambda: services.block_update(report=report, user=team.editor, uid=text.uid, version=text.version,
                                      text="editor's paragraph"),
        lambda: services.block_add(report=report, user=team.owner, kind="text", text="owner's new block"),
        lambda: services.block_update(report=report, user=team.owner, uid=panel.uid, version=panel.version,
                                      params={"run": three[2].public_id}),
    ]
    threads = [threading.Thread(target=save, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    texts = set(report.blocks.values_list("text", flat=True))
    assert {"editor's paragraph", "owner's new block"} <= texts
    assert report.blocks.get(uid=panel.uid).params == {"run": three[2].public_id}
    last = report.versions.order_by("-number").first()
    assert {"editor's paragraph", "owner's new block"} <= {b["text"] for b in last.blocks}
    # The same block from a stale copy: refused with theirs, nothing overwritten.
    with pytest.raises(services.BlockConflict) as conflict:
        services.block_update(report=report, user=team.owner, uid=text.uid, version=text.version, text="stale")
    assert conflict.value.block is not None and conflict.value.block.text == "editor's paragraph"
    assert Block.objects.get(pk=text.pk).text == "editor's paragraph"


def test_conflict_is_shown_to_the_second_editor(client: Any, team: Any, three: list[Any]) -> None:
    report = _report(team, three)
    b = report.blocks.get(kind="text")
    services.block_update(report=report, user=team.owner, uid=b.uid, version=b.version, text="owner was first")
    client.force_login(team.editor)
    resp = client.post(f"/p/demo/reports/{report.public_id}/blocks/{b.uid}/",
                       {"version": b.version, "text": "editor second"}, HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert "owner saved this block" in html and "Replace theirs with mine" in html and "owner was first" in html
    assert Block.objects.get(pk=b.pk).text == "owner was first"


def test_moves_keep_order_and_viewers_cannot_edit(client: Any, team: Any, three: list[Any]) -> None:
    report = _report(team, three)
    first = report.blocks.order_by("position").first()
    client.force_login(team.editor)
    client.post(f"/p/demo/reports/{report.public_id}/blocks/{first.uid}/move/", {"dir": "down"}, HTTP_HX_REQUEST="true")
    assert list(report.blocks.order_by("position").values_list("kind", flat=True)) == ["eval_summary", "text",
                                                                                        "raw_summary"]
    client.force_login(team.viewer)
    page = client.get(f"/p/demo/reports/{report.public_id}/").content.decode()
    assert "Publish" not in page and "<textarea" not in page and "Intro" in page
    for url in ("publish/", f"blocks/{first.uid}/remove/", "blocks/", "title/"):
        assert client.post(f"/p/demo/reports/{report.public_id}/{url}").status_code == 404
    assert report.blocks.count() == 3 and Rollout.objects.exists()
