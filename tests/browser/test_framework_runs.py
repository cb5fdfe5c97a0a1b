"""A verl run imported from its dumps alone, in Chromium: reward curves computed from the dumps on the
run page, the rebuilt GRPO groups on the groups tab, the validation runs linked from the run."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.importers.pipeline import import_path
from deeprepo_web.runs.models import Run
from tests.browser.test_trajectory_pages import wait_js

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_verl_run_page_and_groups(browser_page: Any, live_server: Any, team: Any, samples: Any, tmp_path: Any,
                                  screenshot_dir: str) -> None:
    import shutil

    out = tmp_path / "qwen-grpo"
    shutil.copytree(samples / "verl" / "generated-by-verl-0.9.1" / "rollout_data", out / "rollout_data")
    shutil.copytree(samples / "verl" / "generated-by-verl-0.9.1" / "validation_data", out / "validation_data")
    report = import_path(project=team.project, path=out)
    assert not report.problems
    run = Run.objects.get(project=team.project, kind="train")
    page = browser_page(team.viewer)
    base = f"{live_server.url}/p/{team.project.slug}/runs/{run.public_id}"
    page.goto(f"{base}/")
    assert "reward/mean" in page.content()  # the computed curve is one of the run's series
    page.wait_for_selector(".uplot")
    page.screenshot(path=f"{screenshot_dir}/verl_run.png", full_page=True)

    page.goto(f"{base}/groups/")
    page.fill("input[name=step]", "2")  # the step input (a run may have 100,000 steps: no <select>)
    page.press("input[name=step]", "Enter")
    page.wait_for_url("**step=2**")
    wait_js(page, "document.querySelector('.tj-summary').textContent.includes('Step 2')")
    assert page.locator(".tj-group").count() == 3  # 3 prompts, 4 samples each, rebuilt by prompt
    assert page.locator(".tj-group", has_text="n=4").count() == 3
    # a rebuilt group is named by the start of its question, not a bare hash
    assert page.locator(".tj-group", has_text="Natalia sold clips").count() == 1
    page.screenshot(path=f"{screenshot_dir}/verl_groups.png", full_page=True)

    # a rollout of a group: the verl prompt, the answer, the ground truth and the reward components
    page.locator(".tj-group", has_text="Natalia sold clips").locator("a.chip").first.click()
    page.wait_for_url("**/rollouts/*/")
    text = page.locator("body").inner_text()
    assert "Natalia sold clips" in text and "Let me work through it." in text and "Oracle" in text
    page.screenshot(path=f"{screenshot_dir}/verl_trajectory.png", full_page=True)
    assert not page.watched.errors, page.watched.errors


def test_framework_templates_on_the_launch_page(browser_page: Any, live_server: Any, team: Any,
                                                screenshot_dir: str) -> None:
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/{team.project.slug}/jobs/")
    for name in ("verl PPO / GRPO", "SkyRL", "ART (OpenPipe)"):
        assert page.locator(f"text={name}").count() >= 1
    page.click("text=verl PPO / GRPO")
    page.wait_for_url("**/jobs/new/verl-ppo/")
    assert page.locator("select[name=param_adv_estimator]").input_value() == "grpo"
    assert page.locator("input[name=param_experiment_name]").input_value() == "grpo"
    page.screenshot(path=f"{screenshot_dir}/verl_template.png", full_page=True)
    assert not page.watched.errors, page.watched.errors


def test_runs_table_after_framework_imports(browser_page: Any, live_server: Any, team: Any, samples: Any,
                                            screenshot_dir: str) -> None:
    for folder in ("verl", "skyrl", "art", "areal", "rllm-model-gateway"):
        assert not import_path(project=team.project, path=samples / folder).problems
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/{team.project.slug}/")
    body = page.locator("body").inner_text()
    for name in ("qwen2.5_0.5b_gsm8k_grpo", "email-agent-001", "gsm8k-grpo/trial0", "rllm-model-gateway"):
        assert name in body
    # eval runs show their reward (from their one metric point)
    row = page.locator("tr", has_text="email-agent-001 · val step 2")
    assert row.locator("td.reward").inner_text().strip() == "0.75"
    # verl's own reward curve (critic/score/mean from its file tracker) stands for the train run
    verl = page.locator("tr", has_text="qwen2.5_0.5b_gsm8k_grpo").filter(has_not_text="validation")
    assert verl.locator("td.reward").inner_text().strip() not in ("", "—")
    page.screenshot(path=f"{screenshot_dir}/framework_runs.png", full_page=True)
    assert not page.watched.errors, page.watched.errors
