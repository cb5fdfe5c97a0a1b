"""Done-when, in Chromium: write a report from a comparison, edit a text block, add a curve panel and
a trajectory excerpt, publish, open the share link logged out, export PDF and Markdown."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from deeprepo_web.reports.models import Report
from deeprepo_web.runs.models import Rollout
from tests.compare.seed002 import seed_002

pytestmark = pytest.mark.django_db(transaction=True)
SHOTS = Path(os.environ.get("DEEPREPO_REPORT_SCREENS", "/tmp/deeprepo-screenshots/reports"))


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def _add_panel(page: Any, kind: str, fields: dict[str, str]) -> None:
    before = page.locator("#blocks section.block").count()
    # The last block's request settled first: once in CI the kind picked right after its swap loaded no
    # fields (15 s without the fields' request; never seen here in a loop).
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.select_option(".add-form select[name=kind]", kind)
    first = next(iter(fields))
    page.wait_for_selector(f"#add-fields input[name={first}], #add-fields select[name={first}]")
    for name, value in fields.items():
        page.fill(f"#add-fields [name={name}]", value)
    page.click(".add-form button.primary")
    page.locator("#blocks section.block").nth(before).wait_for()


def test_write_edit_publish_share_export(browser_page: Any, live_server: Any, team: Any, tmp_path: Path) -> None:
    s = seed_002(team.project)
    runs = [s["Qwen3-8B (untrained)"], s["Qwen3-30B-A3B (untrained)"], s["Qwen3-30B-A3B (GRPO trained)"]]
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/compare/?runs={','.join(r.public_id for r in runs)}"
              f"&baseline={runs[1].public_id}&effects=A>B:Model size effect;B>C:RL training effect;A>C:Combined")
    page.click("button:has-text('Write a report')")
    page.wait_for_url(re.compile(r".*/p/demo/reports/\w+/$"))
    report = Report.objects.get()
    body = page.inner_text("#report")
    assert "0.785 (σ 0.100)" in body and "+25.7%" in body and "r1: [0.636, 0.9, 0.85]" in body

    # Edit the behaviour notes: autosave (no button), the preview follows.
    notes = page.locator("section.block", has_text="Behavioral notes")
    notes.locator("summary:has-text('Edit text')").click()
    notes.locator("textarea").fill("### Behavioral notes\n\n- **Every rollout took exactly 6 turns** after training\n"
                                   "- The 18-turn over-exploration is gone")
    notes.locator(".save-status .saved").wait_for()
    assert "Every rollout took exactly 6 turns" in notes.locator(".preview").inner_text()
    block = report.blocks.get(text__contains="exactly 6 turns")
    assert block.version == 2 and block.updated_by == team.editor

    # A curve panel of the training run, and an excerpt of the 18-turn rollout.
    _add_panel(page, "curves", {"runs": s["train"].public_id, "keys": "reward, num_turns", "smoothing": "0.5"})
    curves = page.locator("section.block-curves").last
    assert curves.locator("svg.chart").count() == 2
    long_one = Rollout.objects.get(run=runs[1], num_turns=18)
    _add_panel(page, "excerpt", {"run": runs[1].public_id, "rollout": str(long_one.pk), "turns": "1-4"})
    excerpt = page.locator("section.block-excerpt")
    assert f"Rollout #{long_one.pk}" in excerpt.inner_text() and "print(file_tree)" in excerpt.inner_text()
    assert excerpt.locator("li.turn").count() == 4
    _shot(page, "report-draft.png")

    page.click("button:has-text('Publish')")
    page.wait_for_url(re.compile(r".*/published/$"))
    assert "data as of" in page.inner_text(".report-bar")
    _shot(page, "report-published.png")
    page.click("a:has-text('Versions')")
    versions = page.inner_text("table.versions-table")
    assert "published" in versions and "added Curves" in versions and "editor" in versions
    _shot(page, "report-versions.png")
    page.goto(f"{live_server.url}/p/demo/reports/")
    assert "Published v" in page.inner_text("table.reports-table")
    _shot(page, "reports-list.png")
    page.goto(f"{live_server.url}/p/demo/reports/{report.public_id}/published/")

    page.click("summary:has-text('Share…')")
    page.fill("input[name=title]", "GRPO on deeprepo-orchestration")
    page.click("button:has-text('Create read-only link')")
    url = page.input_value("#share-url")

    anon = browser_page(None)
    assert anon.goto(url).status == 200
    text = anon.inner_text("body")
    assert "0.785 (σ 0.100)" in text and "0.987 (σ 0.018)" in text and "+0.202 (+25.7%)" in text
    assert "Every rollout took exactly 6 turns" in text and f"Rollout #{long_one.pk}" in text
    assert "as of" in text and anon.locator("svg.chart").count() >= 3
    assert anon.locator("form, textarea, .block-tools").count() == 0 and "Demo" not in text
    # Data sources name each run and its id; a logged-out reader gets no link into the project (404s).
    sources = anon.locator("section.block", has_text="Data sources")
    assert f"run page ({runs[0].public_id})" in sources.inner_text()
    assert anon.locator("a[href*='/p/']").count() == 0 and sources.locator("span.unlinked").count() == 3
    _shot(anon, "report-shared.png")
    assert anon.watched.errors == [] and page.watched.errors == []

    # Markdown from the page's button; PDF from the management command (Chromium's print).
    md = page.request.get(f"{live_server.url}/p/demo/reports/{report.public_id}/export.md").text()
    assert "| Average reward | 0.551 (σ 0.176) | 0.785 (σ 0.100) | 0.987 (σ 0.018) |" in md
    assert "Every rollout took exactly 6 turns" in md and "r1: [0.636, 0.9, 0.85]" in md
    if shutil.which("pdftotext") is None:
        pytest.fail("pdftotext is missing (apt-get install poppler-utils; .ci/run installs it)")
    pdf = tmp_path / "report.pdf"
    call_command("report_export", report.public_id, "--pdf", "--out", str(pdf))
    pdf_text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                              check=True).stdout
    for s_ in ("0.551 (σ 0.176)", "0.785 (σ 0.100)", "0.987 (σ 0.018)", "+0.202 (+25.7%)", "8.67 (5–18)"):
        assert s_ in pdf_text, s_
    subprocess.run(["pdftoppm", "-png", "-r", "60", "-f", "1", "-l", "2", str(pdf), str(SHOTS / "report-pdf")],
                   check=True)
