"""The Artifacts tab in Chromium: it renders without script errors, and an editor deletes a row in place."""

from __future__ import annotations

import os
from typing import Any

import pytest

from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.artifacts.services import artifact_store_file
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import run_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _fill(team: Any, tmp_path: Any) -> Run:
    run, _ = run_create(project=team.project, name="qwen3-4b-grpo-repo-audit", model="Qwen/Qwen3-4B")
    files = [
        ("checkpoints/step-400/adapter_model.safetensors", "checkpoint", 2_400_000),
        ("checkpoints/step-200/adapter_model.safetensors", "checkpoint", 2_400_000),
        ("eval/completions-step-400.parquet", "eval", 310_000),
        ("logs/train.log", "log", 48_000),
        ("config/train.toml", "config", 900),
    ]
    for name, kind, size in files:
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(os.urandom(size))
        artifact_store_file(run=run, name=name, kind=kind, path=path)
    return run


def test_artifacts_tab(browser_page: Any, live_server: Any, team: Any, fs_store: str, tmp_path: Any,
                       screenshot_dir: str) -> None:
    run = _fill(team, tmp_path)
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/artifacts/")
    page.wait_for_selector("table.art-table tbody tr")
    assert page.locator("table.art-table tbody tr").count() == 5
    page.screenshot(path=f"{screenshot_dir}/artifacts-tab.png", full_page=True)

    page.on("dialog", lambda d: d.accept())
    row = page.locator("tr", has_text="config/train.toml")
    row.locator("button.danger").click()
    row.wait_for(state="detached")  # htmx swapped the row out in place
    assert page.locator("table.art-table tbody tr").count() == 4
    assert not Artifact.objects.filter(name="config/train.toml").exists()
    assert page.watched.errors == []

    viewer = browser_page(team.viewer)
    viewer.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/artifacts/?kind=checkpoint")
    assert viewer.locator("table.art-table tbody tr").count() == 2
    assert viewer.locator("button.danger").count() == 0
    viewer.screenshot(path=f"{screenshot_dir}/artifacts-tab-viewer.png", full_page=True)
    assert viewer.watched.errors == []
