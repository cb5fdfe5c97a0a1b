"""In Chromium: a run page open while the real `mlflow` client logs shows each new point within 5 s
of the client's call returning, and the runs table shows the MLflow run as running, then finished."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


def test_points_logged_through_mlflow_show_on_an_open_run_page(browser_page: Any, live_server: Any, team: Any,
                                                                monkeypatch: Any, screenshot_dir: str) -> None:
    import mlflow
    from mlflow import MlflowClient

    from deeprepo_web.runs.models import Run

    monkeypatch.setenv("MLFLOW_TRACKING_URI", live_server.url)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", team.key)
    client = MlflowClient(tracking_uri=live_server.url)
    exp_id = client.create_experiment("live-exp")
    mrun = client.create_run(exp_id, run_name="mlflow-live")
    run_id = mrun.info.run_id
    client.log_param(run_id, "lr", "1e-6")
    for step in range(6):
        client.log_batch(run_id, metrics=[mlflow.entities.Metric("reward", 0.1 + step / 20, 0, step)])
    ours = Run.objects.get(project=team.project, external_id=run_id)

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/")
    row = page.locator("tr", has_text="mlflow-live")
    assert "running" in row.inner_text()
    page.screenshot(path=f"{screenshot_dir}/mlflow-runs-table-running.png", full_page=True)

    page.goto(f"{live_server.url}/p/demo/runs/{ours.public_id}/")
    page.wait_for_selector('.panel[data-key="reward"][data-last-step="5"]')
    for step in range(6, 11):
        client.log_metric(run_id, "reward", 0.1 + step / 20, step=step)
        sent = time.monotonic()
        page.wait_for_function(
            f'() => +(document.querySelector(\'.panel[data-key="reward"]\').dataset.lastStep) >= {step}',
            timeout=8000)
        assert time.monotonic() - sent < 5.0, f"step {step} took too long to appear"
    page.screenshot(path=f"{screenshot_dir}/mlflow-run-page-live.png", full_page=True)

    client.set_terminated(run_id, "FINISHED")
    page.goto(f"{live_server.url}/p/demo/")
    assert "finished" in page.locator("tr", has_text="mlflow-live").inner_text()
