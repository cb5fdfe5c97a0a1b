"""The frameworks themselves against our W&B- and MLflow-compatible endpoints, changed only by their
environment (WANDB_BASE_URL + WANDB_API_KEY, MLFLOW_TRACKING_URI + MLFLOW_TRACKING_TOKEN): TRL's
GRPOTrainer with report_to wandb and mlflow, verl's own Tracking with its wandb and mlflow
backends, an OpenRLHF-shaped W&B run with its train/generated_samples table. Each is held at a step
while its run page is open in Chromium, then let go: the open page follows to the last step, and the
database holds exactly what the trainer logged."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run
from tests.frameworks.conftest import Trainer, need, poll
from tests.frameworks.openrlhf_table import sample

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]


def wandb_env(url: str, key: str, tmp: Path) -> dict[str, str | None]:
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WANDB_")}  # None: unset
    env.update({"WANDB_BASE_URL": url, "WANDB_API_KEY": key, "WANDB_DIR": str(tmp), "WANDB_CONFIG_DIR": str(tmp / "cfg"),
                "WANDB_CACHE_DIR": str(tmp / "cache"), "WANDB_DATA_DIR": str(tmp / "data"),
                # the SDK batches every 15 s by default: the README says to lower it for a live page
                "WANDB__FILE_STREAM_TRANSMIT_INTERVAL": "0.5", "WANDB_DISABLE_GIT": "true",
                "WANDB_DISABLE_CODE": "true", "WANDB__DISABLE_STATS": "true", "WANDB_ERROR_REPORTING": "false",
                "WANDB_INIT_TIMEOUT": "120"})
    return env


def mlflow_env(url: str, key: str) -> dict[str, str | None]:
    return {"MLFLOW_TRACKING_URI": url, "MLFLOW_TRACKING_TOKEN": key}


def _series(run: Run, key: str) -> dict[int, float]:
    return dict(Metric.objects.filter(series__run=run, series__key=key).values_list("step", "value"))


def _stored(run: Run, key: str) -> tuple[int, int]:
    """(points, last step) of a series so far."""
    series = MetricSeries.objects.filter(run=run, key=key).first()
    return (0, -1) if series is None or series.last_step is None else (series.count, series.last_step)


def follow_live(trainer: Trainer, find: Callable[[], Run | None], key: str, hold: int,
                browser_page: Any, live_server: Any, team: Any, shot: str) -> Run:
    """Wait for `hold` points of `key`, open the run page, let the trainer go on, and see the open
    page reach the last stored step without a reload; the run shows as running meanwhile. (Steps
    are compared with what is stored: which step a tracker stores a point at is checked apart.)"""
    run: Run = poll(find, timeout=600, what="the run", trainer=trainer)
    # W&B commits a step's row when the next step begins: the step held at is not sent yet
    poll(lambda: _stored(run, key)[0] >= hold - 1, timeout=300, what=f"{hold - 1} points of {key}", trainer=trainer)
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/{team.project.slug}/runs/{run.public_id}/")
    assert page.locator("#run-status .status").inner_text().strip() == "running"
    page.locator(f'.panel[data-key="{key}"]').scroll_into_view_if_needed()  # panels load when seen
    page.wait_for_selector(f'.panel[data-key="{key}"][data-last-step="{_stored(run, key)[1]}"]')
    page.evaluate("window.__noReload = true")
    page.screenshot(path=f"{shot}_running.png", full_page=True)
    trainer.release()
    trainer.wait()
    poll(lambda: Run.objects.get(pk=run.pk).status != "running", timeout=120, what="the run to finish")
    page.wait_for_selector(f'.panel[data-key="{key}"][data-last-step="{_stored(run, key)[1]}"]', timeout=30_000)
    assert page.evaluate("window.__noReload") is True
    page.screenshot(path=f"{shot}_done.png", full_page=True)
    assert page.watched.errors == []
    run.refresh_from_db()
    return run


# ---------------------------------------------------------------- TRL GRPOTrainer

GRPO_STEPS, GRPO_HOLD = 4, 2


def _grpo_rows(trainer: Trainer) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows = trainer.rows()
    return [r for r in rows if "train_runtime" not in r], next(r for r in rows if "train_runtime" in r)


@pytest.mark.parametrize("tracker", ["wandb", "mlflow"])
def test_grpo_trainer_report_to(tracker: str, start_script: Any, live_server: Any, team: Any, tmp_path: Path,
                                browser_page: Any, screenshot_dir: str) -> None:
    need("torch", "trl", tracker)
    env = wandb_env(live_server.url, team.key, tmp_path) if tracker == "wandb" else mlflow_env(live_server.url, team.key)
    trainer = start_script("grpo_tiny.py", "--report-to", tracker, "--steps", str(GRPO_STEPS), "--run-name",
                           f"grpo-{tracker}", env=env, hold_at=GRPO_HOLD)
    # HF's WandbCallback prefixes training keys with train/ (x-axis train/global_step); MLflowCallback does not
    prefix = "train/" if tracker == "wandb" else ""
    run = follow_live(trainer, lambda: Run.objects.filter(project=team.project, name=f"grpo-{tracker}").first(),
                      f"{prefix}reward", GRPO_HOLD, browser_page, live_server, team,
                      os.path.join(screenshot_dir, f"grpo_{tracker}"))
    assert run.source == tracker and run.status == "finished"
    rows, final = _grpo_rows(trainer)
    assert [r["step"] for r in rows] == list(range(1, GRPO_STEPS + 1))
    # W&B: every key is defined against train/global_step (logged in the same row); read through it
    axis = _series(run, "train/global_step") if tracker == "wandb" else None

    def by_step(key: str) -> dict[int, float]:
        points = _series(run, prefix + key)
        return {int(axis[s]): v for s, v in points.items()} if axis is not None else points

    for key in ("reward", "loss", "kl", "rewards/digits_reward/mean", "completions/mean_length"):
        assert by_step(key) == {r["step"]: pytest.approx(r[key]) for r in rows}, key
    if tracker == "wandb":  # HF's WandbCallback puts the end-of-training numbers in the summary
        assert run.summary["train_runtime"] == pytest.approx(final["train_runtime"])
    else:
        assert by_step("train_runtime") == {GRPO_STEPS: pytest.approx(final["train_runtime"])}


# ---------------------------------------------------------------- verl Tracking

VERL_STEPS, VERL_HOLD = 6, 3


@pytest.mark.parametrize("backend", ["wandb", "mlflow"])
def test_verl_tracking_backend(backend: str, start_script: Any, live_server: Any, team: Any, tmp_path: Path,
                               browser_page: Any, screenshot_dir: str) -> None:
    need("verl", backend)
    env = wandb_env(live_server.url, team.key, tmp_path) if backend == "wandb" else mlflow_env(live_server.url, team.key)
    trainer = start_script("verl_tracking.py", "--backend", backend, "--steps", str(VERL_STEPS),
                           "--experiment", f"verl-{backend}", env=env, hold_at=VERL_HOLD)
    run = follow_live(trainer, lambda: Run.objects.filter(project=team.project, name=f"verl-{backend}").first(),
                      "critic/score/mean", VERL_HOLD, browser_page, live_server, team,
                      os.path.join(screenshot_dir, f"verl_{backend}"))
    assert run.source == backend and run.status == "finished"
    rows = trainer.rows()
    assert len(rows) == VERL_STEPS
    # MLflow cannot name a metric with '@': verl's adapter writes '_at_' instead
    at = "@" if backend == "wandb" else "_at_"
    for key in ("critic/score/mean", "actor/pg_loss", "response_length/mean", "val-core/openai/gsm8k/reward/mean@4"):
        assert _series(run, key.replace("@", at)) == {r["step"]: r[key] for r in rows}, key
    assert Metric.objects.filter(series__run=run).count() == VERL_STEPS * 7
    if backend == "wandb":
        # the cumulative validation table (re-logged whole at steps 2, 4, 6) → one rollout per sample, once
        samples = [line for line in (trainer.out / "generations.jsonl").read_text().splitlines()]
        stored = Rollout.objects.filter(run=run).values_list("step", "example__key", "final_answer", "reward")
        assert sorted(stored) == sorted(_verl_expected(samples))


def _verl_expected(lines: list[str]) -> list[tuple[int, str, str, float]]:
    out = []
    for line in lines:
        row = json.loads(line)
        question, answer, score = row["sample"]
        out.append((row["step"], question, answer, score))
    return out


# ---------------------------------------------------------------- OpenRLHF-shaped W&B run

def test_openrlhf_generated_samples_table(start_script: Any, live_server: Any, team: Any, tmp_path: Path,
                                          browser_page: Any, screenshot_dir: str) -> None:
    need("wandb")
    steps, hold = 4, 2
    trainer = start_script("openrlhf_table.py", "--steps", str(steps), env=wandb_env(live_server.url, team.key, tmp_path),
                           hold_at=hold)
    run = follow_live(trainer, lambda: Run.objects.filter(project=team.project, name="openrlhf-tiny").first(),
                      "train/reward", hold, browser_page, live_server, team,
                      os.path.join(screenshot_dir, "openrlhf_wandb"))
    assert run.status == "finished" and "group:ppo" in run.tags
    rows = trainer.rows()
    # train/* is defined against train/global_step (logged in the same row): read through it, the
    # stored points are the trainer's, step for step
    axis = _series(run, "train/global_step")
    for key in ("reward", "policy_loss", "kl"):
        assert {int(axis[s]): v for s, v in _series(run, f"train/{key}").items()} == {r["step"]: r[key] for r in rows}
    # the table is re-logged whole, a row longer, at each step: one rollout per row, once
    stored = sorted(Rollout.objects.filter(run=run).values_list("step", "final_answer", "reward"))
    assert stored == [(s, sample(s)[0], sample(s)[1]) for s in range(1, steps + 1)]
