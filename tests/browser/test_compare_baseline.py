"""Compare's default baseline is the earliest run (by checkpoint step, then creation) whatever the
order the runs were ticked in, the page says which run it is, and eval-only runs (one-point metrics)
get no empty curves panel."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import run_create
from tests.factories import rollout


def _eval(team: Any, name: str, reward: float, *, step: int | None, age_minutes: int) -> Run:
    run, _ = run_create(project=team.project, name=name, kind="eval", checkpoint_step=step, status="finished")
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=age_minutes))
    rollouts_ingest(run=run, rollouts=[rollout(f"ex-{i}", reward=reward + (0.01 if i % 2 else 0), step=None,
                                               uid=f"{name}-{i}", turns=1) for i in range(20)])
    metrics_ingest(run=run, points=[{"step": 0, "values": {"eval/all/avg_score": reward}}])
    return run


def test_the_earliest_run_is_the_baseline_and_evals_get_no_curves(browser_page, live_server, team,
                                                                    screenshot_dir):
    before = _eval(team, "qwen-untrained", 0.05, step=None, age_minutes=60)
    after = _eval(team, "qwen-grpo-step-300", 0.70, step=300, age_minutes=5)
    page = browser_page(team.editor)
    # Ticked newest first, as the runs table lists them.
    page.goto(f"{live_server.url}/p/demo/compare/?runs={after.public_id},{before.public_id}")
    page.wait_for_selector("#cmp-table")
    page.screenshot(path=f"{screenshot_dir}/compare-baseline.png", full_page=True)
    base_col = page.locator("#cmp-table th.run-col.base")
    assert "qwen-untrained" in base_col.inner_text() and "baseline" in base_col.inner_text()
    note = page.inner_text("#baseline-note")
    assert "qwen-untrained" in note and "earliest" in note
    reward_delta = page.locator("#cmp-table tbody tr").first.locator(".delta")
    assert reward_delta.count() == 1 and "+" in reward_delta.inner_text()
    assert "tone-good" in (reward_delta.get_attribute("class") or "")
    effect = page.locator("table.effects tbody tr").first.inner_text()
    assert "qwen-untrained → qwen-grpo-step-300" in effect and "+0.650" in effect
    assert page.locator("#curve-chart").count() == 0  # one-point metrics are no curve
    assert page.watched.errors == []


def test_a_chosen_baseline_is_kept_and_named(client, team):
    before = _eval(team, "qwen-untrained", 0.05, step=None, age_minutes=60)
    after = _eval(team, "qwen-grpo-step-300", 0.70, step=300, age_minutes=5)
    client.force_login(team.viewer)
    page = client.get(f"/p/demo/compare/?runs={before.public_id},{after.public_id}&baseline={after.public_id}")
    text = page.content.decode()
    assert "as chosen above" in text and "<b>B · qwen-grpo-step-300</b>" in text


def test_checkpoint_step_comes_before_creation(client, team):
    late_step = _eval(team, "ckpt-600", 0.6, step=600, age_minutes=90)  # made first, of a later checkpoint
    early_step = _eval(team, "ckpt-100", 0.3, step=100, age_minutes=10)
    client.force_login(team.viewer)
    text = client.get(f"/p/demo/compare/?runs={late_step.public_id},{early_step.public_id}").content.decode()
    assert "<b>B · ckpt-100</b>, the earliest" in text
