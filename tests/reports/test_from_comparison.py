"""Seed 002's report, written by "Write a report" from its three eval runs: its numbers are on the page."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.reports.models import Report
from tests.reports.conftest import page_text

pytestmark = pytest.mark.django_db


def _write(client: Any, runs: list[Any], **extra: str) -> Report:
    resp = client.post("/p/demo/reports/from-compare/", {"runs": ",".join(r.public_id for r in runs), **extra})
    assert resp.status_code == 302, resp.content[:500]
    report = Report.objects.get()
    assert resp["Location"] == f"/p/demo/reports/{report.public_id}/"
    return report


def test_seed_002_report_from_three_eval_runs(client: Any, team: Any, three: list[Any]) -> None:
    client.force_login(team.editor)
    report = _write(client, three, baseline=three[1].public_id,
                    effects="A>B:Model size effect;B>C:RL training effect;A>C:Combined")
    kinds = list(report.blocks.order_by("position").values_list("kind", flat=True))
    # Laid out like seed 002: heading, the table, each run's raw output, notes, per-example rewards,
    # the training curve, data sources.
    assert kinds == ["text", "text", "compare", "raw_summary", "raw_summary", "raw_summary", "text", "per_example",
                     "text", "curves", "text"]
    text = page_text(client.get(f"/p/demo/reports/{report.public_id}/").content.decode())
    # The before/after table.
    for s in ("0.551 (σ 0.176)", "0.785 (σ 0.100)", "0.987 (σ 0.018)", "0.636 — 0.900", "0.962 — 1.000",
              "8.67 (5–18)", "6.00 (6–6)", "17% (1/6)", "+0.202 (+25.7%)"):
        assert s in text, s
    # The effects, as the report's "Isolating training vs scaling effects".
    assert "Model size effect" in text and "+0.234" in text and "+42.5%" in text
    assert "RL training effect" in text and "+79.1%" in text
    # Each run's raw eval output, like vf-eval's.
    assert "reward: avg - 0.785, std - 0.100" in text
    assert "r1: [0.636, 0.9, 0.85]" in text and "r2: [0.887, 0.7, 0.738]" in text
    assert "reward: avg - 0.987, std - 0.018" in text and "r1: [0.962, 1.0, 1.0]" in text
    assert "num_turns: avg - 8.667, std - 4.422" in text and "r1: [18.0, 5.0, 5.0]" in text
    assert "delegation_reward: avg - 0.785, std - 0.100" in text
    assert "input_tokens (avg): 14598.500" in text and "input_tokens (avg): 8585.167" in text
    assert "stop_conditions: episode_done: 1.000" in text
    # Models and runs; the training run's reward progression is drawn; data sources link the runs.
    assert "Qwen/Qwen3-30B-A3B-Instruct-2507:t2nj7mvwh0qs5h1szlfekqoh" in text
    assert "Qwen3-30B-A3B GRPO (LoRA, 100 steps)" in text
    assert "Behavioral notes" in text and "Data sources" in text
    html = client.get(f"/p/demo/reports/{report.public_id}/").content.decode()
    assert f'href="/p/demo/runs/{three[2].public_id}/"' in html
    assert "<svg class=\"chart\"" in html and "last 0.9688 @ 99" in text  # the last training reward


def test_compare_page_offers_write_a_report_to_editors_only(client: Any, team: Any, three: list[Any]) -> None:
    url = "/p/demo/compare/?runs=" + ",".join(r.public_id for r in three)
    client.force_login(team.editor)
    assert "Write a report" in client.get(url).content.decode()
    client.force_login(team.viewer)
    assert "Write a report" not in client.get(url).content.decode()
    resp = client.post("/p/demo/reports/from-compare/", {"runs": ",".join(r.public_id for r in three)})
    assert resp.status_code == 404 and not Report.objects.exists()


def test_reports_page_is_in_the_navigation_and_lists_reports(client: Any, team: Any, three: list[Any]) -> None:
    client.force_login(team.editor)
    report = _write(client, three)
    home = client.get("/p/demo/").content.decode()
    assert 'href="/p/demo/reports/"' in home
    listing = client.get("/p/demo/reports/").content.decode()
    assert report.title in listing and "Draft" in listing
