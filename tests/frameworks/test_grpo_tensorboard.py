"""TRL's real GRPOTrainer with `report_to=["tensorboard"]` and `deeprepo watch` on its logdir: the run
shows on an open run page while it trains (Chromium), and every value it logged is stored once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deeprepo_client.cli import main as cli_main
from deeprepo_web.runs.models import Metric, MetricSeries, Run
from tests.frameworks.conftest import need, poll

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]
STEPS, HOLD = 4, 2


def _last_step(key: str) -> int:
    series = MetricSeries.objects.filter(key=key).first()
    return -1 if series is None or series.last_step is None else series.last_step


def test_grpo_trainer_tensorboard_watched_live(start_script: Any, live_server: Any, team: Any, tmp_path: Path,
                                               browser_page: Any, screenshot_dir: str) -> None:
    need("torch", "trl", "tensorboardX")
    logdir = tmp_path / "tb"
    trainer = start_script("grpo_tiny.py", "--report-to", "tensorboard", "--steps", str(STEPS),
                           env={"TENSORBOARD_LOGGING_DIR": str(logdir)}, hold_at=HOLD)

    def watch_pass() -> None:
        if logdir.exists():
            assert cli_main(["--url", live_server.url, "--api-key", team.key, "watch", str(logdir),
                             "--project", "demo", "--once"]) == 0

    poll(lambda: _last_step("train/reward") >= HOLD, timeout=600, what=f"step {HOLD} stored",
         trainer=trainer, between=watch_pass)
    run = Run.objects.get(project=team.project)
    assert (run.status, run.source, run.name) == ("running", "tensorboard", "tb")
    assert run.config["args"]["max_steps"] == STEPS and run.config["args"]["report_to"] == ["tensorboard"]

    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run.public_id}/")
    page.locator('.panel[data-key="train/reward"]').scroll_into_view_if_needed()  # panels load when seen
    page.wait_for_selector(f'.panel[data-key="train/reward"][data-last-step="{HOLD}"]')
    page.evaluate("window.__noReload = true")
    page.screenshot(path=os.path.join(screenshot_dir, "grpo_tensorboard_running.png"), full_page=True)

    trainer.release()  # the trainer goes on; the open page follows without a reload
    poll(lambda: trainer.proc.poll() is not None and _last_step("train/reward") >= STEPS, timeout=600,
         what="the last step stored", trainer=trainer, between=watch_pass)
    trainer.wait()
    watch_pass()
    page.wait_for_selector(f'.panel[data-key="train/reward"][data-last-step="{STEPS}"]', timeout=15_000)
    assert page.evaluate("window.__noReload") is True
    page.screenshot(path=os.path.join(screenshot_dir, "grpo_tensorboard_done.png"), full_page=True)
    assert page.watched.errors == []

    # Exactly what the trainer logged (as float32: that is what add_scalar writes), each point once.
    rows = [r for r in trainer.rows() if "train_runtime" not in r]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    for key in ("reward", "loss", "kl", "rewards/digits_reward/mean", "completions/mean_length"):
        stored = dict(Metric.objects.filter(series__run=run, series__key=f"train/{key}").values_list("step", "value"))
        assert stored == {r["step"]: float(np.float32(r[key])) for r in rows}, key
    final = next(r for r in trainer.rows() if "train_runtime" in r)
    runtime = Metric.objects.get(series__run=run, series__key="train/train_runtime")
    assert (runtime.step, runtime.value) == (STEPS, float(np.float32(final["train_runtime"])))
    keys = {k for r in rows for k in r if k != "step"} | {k for k in final if k != "step"}
    assert set(MetricSeries.objects.filter(run=run).values_list("key", flat=True)) >= {f"train/{k}" for k in keys}
    pairs = {(k, r["step"]) for r in [*rows, final] for k in r if k != "step"}
    assert Metric.objects.filter(series__run=run).count() == len(pairs)
