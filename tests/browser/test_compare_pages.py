"""The pages in Chromium: no script errors under the CSP, charts drawn; screenshots to look at."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.compare.patches import swebench_rollout
from tests.compare.seed002 import seed_002

pytestmark = pytest.mark.django_db(transaction=True)


def _runs(s: dict[str, Any]) -> list[Any]:
    return [s["Qwen3-8B (untrained)"], s["Qwen3-30B-A3B (untrained)"], s["Qwen3-30B-A3B (GRPO trained)"]]


def test_compare_page_in_browser(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str) -> None:
    s = seed_002(team.project)
    runs = _runs(s)
    page = browser_page(team.editor)
    effects = "A>B:Model size effect;B>C:RL training effect;A>C:Combined"
    page.goto(f"{live_server.url}/p/demo/compare/?runs={','.join(r.public_id for r in runs)}"
              f"&baseline={runs[1].public_id}&effects={effects}")
    page.wait_for_selector("#cmp-table")
    # The strip chart is drawn (non-blank canvas).
    drawn = page.evaluate("""() => { const c = document.getElementById('strip-chart');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let ink = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 200) ink++; return ink; }""")
    assert drawn > 500
    assert "+25.7%" in page.inner_text("#cmp-table")
    page.screenshot(path=os.path.join(screenshot_dir, "compare_seed002.png"), full_page=True)
    with page.expect_download() as dl:
        page.click(".js-png")
    assert dl.value.suggested_filename == "cmp-charts.png"
    assert page.watched.errors == []


def test_compare_curves_of_training_runs(browser_page: Any, live_server: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    s = seed_002(team.project)
    other, _ = run_create(project=team.project, name="Qwen3-30B-A3B GRPO (lr 2e-5)", kind="train")
    metrics_ingest(run=other, points=[{"step": i * 10, "values": {"reward": 0.8 + i * 0.01}} for i in range(10)])
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/compare/?runs={s['train'].public_id},{other.public_id}")
    page.wait_for_selector("#curve-chart .uplot")
    assert page.locator("#curve-chart .u-legend").inner_text().count("GRPO") == 2
    assert page.watched.errors == []


def test_compare_curves_of_a_flat_line_get_a_small_range(browser_page: Any, live_server: Any, team: Any,
                                                          screenshot_dir: str) -> None:
    """Two runs whose loss/kl is 0 at every step: the y-axis hugs 0 (as the run charts do), not 0–100."""
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    runs = []
    for name in ("GRPO flat a", "GRPO flat b"):
        run, _ = run_create(project=team.project, name=name, kind="train")
        metrics_ingest(run=run, points=[{"step": i, "values": {"loss/kl": 0.0}} for i in range(8)])
        runs.append(run)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/compare/?runs={runs[0].public_id},{runs[1].public_id}")
    page.wait_for_selector("#curve-chart .uplot")
    page.locator("#curve-chart").screenshot(path=os.path.join(screenshot_dir, "compare-curve-flat.png"))
    low, high = page.evaluate("() => { const s = document.getElementById('curve-chart')._plot.scales.y;"
                              " return [s.min, s.max]; }")
    assert low < 0 < high and high - low <= 2, (low, high)
    assert page.watched.errors == []


def test_checkpoint_progression_in_browser(browser_page: Any, live_server: Any, team: Any,
                                           screenshot_dir: str) -> None:
    s = seed_002(team.project)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{s['train'].public_id}/checkpoints/?pass=0.95")
    page.wait_for_selector("#ckpt-chart .uplot")
    text = page.inner_text("main")
    assert "fail → pass" in text
    page.screenshot(path=os.path.join(screenshot_dir, "checkpoints.png"), full_page=True)
    assert page.watched.errors == []


def test_patch_view_in_browser(browser_page: Any, live_server: Any, team: Any, screenshot_dir: str) -> None:
    rollout = swebench_rollout(team.project)
    page = browser_page(team.viewer)
    base = f"{live_server.url}/p/demo/runs/{rollout.run.public_id}/rollouts/{rollout.pk}/patch/"
    page.goto(base)
    assert "<script>alert(1)</script>" in page.inner_text(".patch-pair")
    page.screenshot(path=os.path.join(screenshot_dir, "patch_unified.png"), full_page=True)
    page.goto(base + "?mode=split")
    page.screenshot(path=os.path.join(screenshot_dir, "patch_split.png"), full_page=True)
    assert page.watched.errors == []
