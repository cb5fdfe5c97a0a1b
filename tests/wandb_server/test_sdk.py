"""The real wandb SDK (the newest, 0.21 and the legacy Python sender of 0.17.9) logging a run into a
live server, unmodified: only WANDB_BASE_URL and WANDB_API_KEY point it here."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run
from deeprepo_web.wandb_server.models import ConsoleLine, RunAlert
from tests.wandb_server.sdk import run_script, sdk_env, start_script, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _points(run: Run, key: str) -> list[tuple[int, float]]:
    series = MetricSeries.objects.get(run=run, key=key)
    return [(m.step, m.value) for m in Metric.objects.filter(series=series).order_by("step")]


def test_init_log_table_image_alert_finish(live_server: Any, team: Any, tmp_path: Path, wandb_python: str) -> None:
    # W&B Artifacts (the checkpoint) are not kept: the run must go on and finish all the same.
    spec = {"id": "abc12345", "project": "grpo-math", "name": "grpo lr=1e-6", "steps": 20,
            "config": {"lr": 1e-6, "model": {"name": "qwen-0.5b"}}, "tags": ["baseline"], "notes": "first try",
            "group": "sweep-1", "job_type": "train", "define_metric": True, "print": True, "nan": True,
            "table": [["2+2?", "4", 1.0], ["3+3?", "7", 0.0]], "image": True, "alert": "reward dropped",
            "summary": {"best_reward": 0.9}, "artifact": True}
    run_script(sdk_env(live_server.url, team.key, tmp_path), spec, python=wandb_python)
    run = Run.objects.get(project=team.project, source="wandb")
    assert run.external_id == "grpo-math/abc12345" and run.name == "grpo lr=1e-6"
    assert run.status == "finished" and run.finished_at is not None
    assert run.config["lr"] == 1e-6 and run.config["model"] == {"name": "qwen-0.5b"}
    assert set(run.tags) == {"baseline", "wandb:grpo-math", "group:sweep-1", "job_type:train"}
    assert run.notes == "first try"
    loss = _points(run, "loss")
    # define_metric's eval rows take steps of their own: loss is at the 20 steps it was logged at.
    assert len(loss) == 20 and math.isnan(loss[0][1]) and loss[1][1] == 0.2
    assert _points(run, "reward")[0][1] == math.inf
    assert MetricSeries.objects.get(run=run, key="eval/acc").count == 10
    assert MetricSeries.objects.get(run=run, key="eval_step").count == 10
    assert run.summary["best_reward"] == 0.9 and run.summary["exit_code"] == 0
    lines = [c.text for c in ConsoleLine.objects.filter(run=run).order_by("offset")]
    assert [t for t in lines if t.startswith("step ")][:3] == ["step 0 loss nan", "step 1 loss 0.2", "step 2 loss 0.3"]
    rollouts = list(Rollout.objects.filter(run=run).order_by("reward"))
    assert [(r.final_answer, r.reward) for r in rollouts] == [("7", 0.0), ("4", 1.0)]
    assert Artifact.objects.filter(run=run, name__startswith="media/board/", kind="image").count() == 1
    assert list(RunAlert.objects.filter(run=run).values_list("title", "text")) == [("reward dropped", "reward collapsed")]


def test_resume_allow_then_must_continues_the_same_run(live_server: Any, team: Any, tmp_path: Path,
                                                       wandb_python: str) -> None:
    env = sdk_env(live_server.url, team.key, tmp_path)
    run_script(env, {"id": "res00001", "steps": 5, "resume": "allow"}, python=wandb_python)
    run_script(env, {"id": "res00001", "steps": 4, "resume": "must"}, python=wandb_python)
    run_script(env, {"id": "res00001", "steps": 3, "resume": "allow"}, python=wandb_python)
    run = Run.objects.get(project=team.project, source="wandb")
    assert run.status == "finished"
    # Each resumed process goes on from the step after the last one stored: 12 steps, none twice.
    assert [s for s, _ in _points(run, "loss")] == list(range(12))
    assert [v for _, v in _points(run, "loss")][5] == 0.1  # the second process's first step


def test_resume_must_of_an_unknown_run_fails_cleanly(live_server: Any, team: Any, tmp_path: Path) -> None:
    env = sdk_env(live_server.url, team.key, tmp_path)
    done = run_script(env, {"id": "nosuch01", "steps": 1, "resume": "must"}, check=False)
    assert done.returncode != 0 and "nosuch01" in done.stderr
    assert not Run.objects.filter(project=team.project).exists()


def test_shared_mode_two_writers_make_one_run(live_server: Any, team: Any, tmp_path: Path) -> None:
    env = sdk_env(live_server.url, team.key, tmp_path)
    primary = start_script(env, {"id": "shared01", "steps": 4, "shared": "primary", "x_label": "trainer",
                                 "keys": ["trainer/loss"], "explicit_step": True, "hold": 1})
    try:
        wait_for(lambda: MetricSeries.objects.filter(run__external_id="rl-demo/shared01", key="trainer/loss",
                                                     count=4).exists(), what="the primary's points")
        run_script(env, {"id": "shared01", "steps": 6, "shared": "secondary", "x_label": "rollout-worker",
                         "keys": ["worker/reward"], "explicit_step": True, "print": True})
    except BaseException:
        primary.kill()
        raise
    out, err = primary.communicate(input="go\n", timeout=120)
    assert primary.returncode == 0, err[-3000:]
    run = Run.objects.get(project=team.project, source="wandb")
    assert [s for s, _ in _points(run, "worker/reward")] == list(range(6))
    assert [s for s, _ in _points(run, "trainer/loss")] == list(range(4))
    # Each writer's console lines are kept under its own client id, prefixed with its x_label.
    worker_lines = ConsoleLine.objects.filter(run=run, text__startswith="[rollout-worker] step ")
    assert worker_lines.count() == 6 and worker_lines.values("writer").distinct().count() == 1
    assert ConsoleLine.objects.filter(run=run, text="[trainer] SCRIPT-HOLDING").exclude(
        writer=worker_lines.first().writer).exists()
    assert run.status == "finished"


def test_wrong_key_is_refused_with_a_clear_message(live_server: Any, team: Any, tmp_path: Path,
                                                    wandb_python: str) -> None:
    wrong = "drk_00000000-" + "x" * 40  # the right shape, so the SDK sends it; unknown here
    done = run_script(sdk_env(live_server.url, wrong, tmp_path), {"id": "nokey001", "steps": 2},
                      python=wandb_python, check=False)
    assert done.returncode != 0 and "SCRIPT-DONE" not in done.stdout
    assert "API key" in done.stderr or "api key" in done.stderr.lower() or "401" in done.stderr, done.stderr[-2000:]
    assert not Run.objects.exists()
