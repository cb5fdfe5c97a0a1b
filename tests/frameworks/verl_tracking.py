"""verl's own `Tracking` class (verl.utils.tracking, from the installed verl package) logging a GRPO-
shaped run through its `wandb` or `mlflow` backend, configured only by the environment
(WANDB_BASE_URL / WANDB_API_KEY or MLFLOW_TRACKING_URI), plus its ValidationGenerationsLogger (a
cumulative W&B table, or one JSON artifact per validation step with MLflow). The metric names and
the config's shape are verl's (`trainer`, `algorithm`, `actor_rollout_ref`). Run in a subprocess:

    PYTHONPATH=. python tests/frameworks/verl_tracking.py --backend wandb --output-dir OUT --steps 6 [--hold-at 3 --gate FILE]

Every logged row goes to OUT/log_rows.jsonl and every validation sample to OUT/generations.jsonl.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.frameworks.gate import hold

VAL_EVERY = 2


def metrics(step: int) -> dict[str, float]:
    return {"critic/score/mean": round(0.1 + 0.1 * step, 4), "critic/rewards/mean": round(0.05 * step, 4),
            "actor/pg_loss": round(1.0 / step, 4), "actor/entropy": round(2.0 - 0.1 * step, 4),
            "response_length/mean": 100.0 + step, "timing_s/step": 1.5,
            "val-core/openai/gsm8k/reward/mean@4": round(0.2 * step, 4)}


def samples(step: int) -> list[list[object]]:
    """(input, output, score) rows, as verl's trainer hands them to ValidationGenerationsLogger."""
    return [[f"What is {step}+{i}?", f"The answer is {step + i}.", float(i % 2)] for i in range(2)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True, choices=["wandb", "mlflow"])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--project", default="verl-grpo")
    parser.add_argument("--experiment", default="qwen-tiny-grpo")
    parser.add_argument("--hold-at", type=int)
    parser.add_argument("--gate")
    a = parser.parse_args()

    from verl.utils.tracking import Tracking, ValidationGenerationsLogger

    out = Path(a.output_dir)
    config = {"trainer": {"project_name": a.project, "experiment_name": a.experiment, "total_training_steps": a.steps,
                          "logger": [a.backend]},
              "algorithm": {"adv_estimator": "grpo", "use_kl_in_reward": False},
              "actor_rollout_ref": {"model": {"path": "tiny"}, "rollout": {"n": 4}, "actor": {"optim": {"lr": 1e-6}}}}
    tracker = Tracking(project_name=a.project, experiment_name=a.experiment, default_backend=[a.backend],
                       config=config)
    generations = ValidationGenerationsLogger()
    for step in range(1, a.steps + 1):
        row = metrics(step)
        tracker.log(data=row, step=step)
        with open(out / "log_rows.jsonl", "a") as f:
            f.write(json.dumps({"step": step, **row}) + "\n")
        if step % VAL_EVERY == 0:
            generations.log(tracker.logger, samples(step), step)
            with open(out / "generations.jsonl", "a") as f:
                f.writelines(json.dumps({"step": step, "sample": s}) + "\n" for s in samples(step))
        hold(step, a.hold_at, a.gate)
    tracker.finish()


if __name__ == "__main__":
    main()
