"""Writes a W&B run with the real `wandb` package in offline mode (run by tests in a child process,
so wandb's service process and globals stay out of the test process). Values are functions of the
step, so a test can recompute every one of them."""

from __future__ import annotations

import math
import sys

import wandb

STEPS = 200


def reward(step: int) -> float:
    return round(0.05 * step + 0.001 * (step % 3), 6)


def kl(step: int) -> float:
    return float("nan") if step == 7 else 0.01 / step


def main(name: str) -> None:
    run = wandb.init(project="grpo-import-test", name=name, tags=["grpo", "import"], notes="written offline",
                     config={"lr": 0.001, "model": "tiny-policy", "rollout": {"n": 2}}, mode="offline")
    run.define_metric("eval/step")
    run.define_metric("eval/*", step_metric="eval/step")
    run.define_metric("train/reward", summary="max")
    for step in range(1, STEPS + 1):
        run.log({"train/reward": reward(step), "train/kl": kl(step)}, step=step)
        if step % 5 == 0:
            run.log({"eval/step": step // 5, "eval/acc": step / 100}, step=step)
        if step == 10:
            table = wandb.Table(columns=["global_step", "prompt", "completion", "reward"], data=[
                [10, "What is 2+2?", "4", 1.0], [10, "What is 2+2?", "<b>5</b>", 0.0],
                [10, "Capital of France?", "Paris", 1.0]])
            run.log({"train/generated_samples": table}, step=step)
    run.summary["best_eval"] = 0.2
    assert not math.isnan(reward(1))
    run.finish()


if __name__ == "__main__":
    main(sys.argv[1])
