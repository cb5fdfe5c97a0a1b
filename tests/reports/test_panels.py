"""The remaining panel kinds on a report page, each with what a reader must find in it, and their
Markdown: GRPO health, checkpoints with flips, eval summary, example side by side, search counts,
label rates, curves by time."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deeprepo_web.labels.services import label_create, mark_create
from deeprepo_web.reports import services
from deeprepo_web.reports.exports import report_markdown
from deeprepo_web.reports.selectors import draft_items
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from tests.factories import rollout
from tests.reports.conftest import page_text

pytestmark = pytest.mark.django_db


def test_every_other_panel_kind_renders_its_numbers(client: Any, team: Any, seeded: dict[str, Any],
                                                    three: list[Any]) -> None:
    train = seeded["train"]
    # Training rollouts: step 0 has a dead all-fail group (two zeros), step 1 a live one.
    rollouts_ingest(run=train, rollouts=[
        rollout("ex-a", reward=0.0, step=0, uid="a0"), rollout("ex-a", reward=0.0, step=0, uid="a1", sample_index=1),
        rollout("ex-a", reward=1.0, step=1, uid="a2"), rollout("ex-a", reward=0.5, step=1, uid="a3", sample_index=1),
    ])
    label = label_create(project=team.project, name="over-exploration")
    long_one = three[1].rollouts.get(num_turns=18)
    mark_create(label=label, rollout=long_one, user=team.editor)
    from deeprepo_web.search.indexer import search_index_update

    search_index_update()
    report = services.report_create(project=team.project, user=team.editor, title="All panels", blocks=[
        {"kind": "grpo_health", "params": {"run": train.public_id}},
        {"kind": "checkpoints", "params": {"run": train.public_id}},
        {"kind": "eval_summary", "params": {"run": three[2].public_id}},
        {"kind": "side_by_side", "params": {"runs": [three[1].public_id, three[2].public_id],
                                            "example": "mini-repo-flask-auth"}},
        {"kind": "search_counts", "params": {"q": "over", "tool": "llm_batch", "run": train.public_id}},
        {"kind": "label_rates", "params": {"runs": [three[1].public_id, three[2].public_id]}},
        {"kind": "curves", "params": {"runs": [train.public_id], "keys": ["reward"], "x": "time", "smoothing": 0.3}},
    ])
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/reports/{report.public_id}/").content.decode()
    text = page_text(html)
    assert "GRPO health · Qwen3-30B-A3B GRPO (LoRA, 100 steps)" in text and "2 steps with rollouts" in text
    assert "Checkpoints of" in text and "Qwen3-30B-A3B (GRPO step 50)" in text
    assert "fail → pass" in text  # flips between the first and last checkpoint
    assert "0.987" in text and "95% CI" in text and "Pass rate" in text  # the eval summary's tiles
    assert "Example mini-repo-flask-auth" in text and "0.636" in text and "0.962" in text
    assert "Share of each step's rollouts that match" in text
    assert "Label rate: over-exploration" in text and "17% (1/6)" in text
    assert html.count('<svg class="chart"') >= 4
    assert "panel-error" not in html and "panel-gone" not in html
    md = report_markdown(title=report.title, items=draft_items(report=report))
    assert "### GRPO health" in md and "| Step | Mean reward |" in md
    assert "| Step | Eval run | Rollouts | Mean reward (95% CI) | Pass rate |" in md
    assert "Mean reward 0.987" in md and "Label rate: over-exploration" in md


def test_bad_panel_parameters_say_what_was_wrong(team: Any, seeded: dict[str, Any], three: list[Any]) -> None:
    report = services.report_create(project=team.project, user=team.editor, title="t")
    cases = [
        ("curves", {"runs": three[0].public_id, "keys": "no_such_metric"}, "no run here logged"),
        ("curves", {"runs": seeded["train"].public_id, "keys": "reward", "smoothing": "2"}, "smoothing: between"),
        ("curves", {"runs": seeded["train"].public_id, "keys": "reward", "x": "wall"}, "x: step or time"),
        ("excerpt", {"run": three[0].public_id, "rollout": "abc"}, "rollout:"),
        ("excerpt", {"run": three[0].public_id, "rollout": str(three[0].rollouts.first().pk), "turns": "9-1"},
         "turns:"),
        ("compare", {"runs": three[0].public_id}, "at least 2"),
        ("compare", {"runs": f"{three[0].public_id},{three[1].public_id}", "effects": "A>Z"}, "effects:"),
        ("side_by_side", {"runs": f"{three[0].public_id},{three[1].public_id}", "example": "nope"}, "example:"),
        ("search_counts", {"q": ""}, "q:"),
        ("nonsense", {}, "kind:"),
    ]
    for kind, params, message in cases:
        with pytest.raises(ValueError, match=message):
            services.block_add(report=report, user=team.editor, kind=kind, params=params)
    assert report.blocks.count() == 0


def test_a_share_chart_spans_zero_to_one_even_when_every_rollout_matches() -> None:
    from deeprepo_web.reports.templatetags.report_tags import search_svg

    data = {"runs": [{"run": "train", "steps": [0, 1, 2], "share": [1.0, 1.0, 1.0]}]}
    ticks = re.findall(r'<text class="tick"[^>]*text-anchor="end">([^<]+)</text>', str(search_svg(data)))
    assert ticks[0] == "0" and ticks[-1] == "1"  # not 0.5 … 1.5 around a flat line
