"""A W&B run logged the way OpenRLHF's WandbLogger logs (openrlhf/utils/logging_utils.py): custom
x-axes (`train/global_step` for `train/*`, `eval/epoch` for `eval/*`), every training key under
`train/`, and its `train/generated_samples` table (`global_step`, `text`, `reward`) re-logged whole,
one row longer, at every step. OpenRLHF itself needs DeepSpeed, vLLM and a GPU: this script makes
the same SDK calls with the real wandb package. Run in a subprocess:

    PYTHONPATH=. python tests/frameworks/openrlhf_table.py --output-dir OUT --steps 4 [--hold-at 2 --gate FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tests.frameworks.gate import hold


def status(step: int) -> dict[str, float]:
    return {"policy_loss": round(0.5 / step, 4), "reward": round(0.25 * step, 4), "kl": round(0.01 * step, 4),
            "response_length": 50.0 + step}


def sample(step: int) -> tuple[str, float]:
    return (f"<|user|>What is {step}*3?<|assistant|>It is {step * 3}.", round(0.25 * step, 4))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--hold-at", type=int)
    parser.add_argument("--gate")
    a = parser.parse_args()

    import wandb

    out = Path(a.output_dir)
    wandb.init(project="openrlhf-ppo", name="openrlhf-tiny", group="ppo", config={"actor_learning_rate": 5e-7},
               reinit=True)
    wandb.define_metric("train/global_step")
    wandb.define_metric("train/*", step_metric="train/global_step", step_sync=True)
    wandb.define_metric("eval/epoch")
    wandb.define_metric("eval/*", step_metric="eval/epoch", step_sync=True)
    table = wandb.Table(columns=["global_step", "text", "reward"])
    for step in range(1, a.steps + 1):
        table = wandb.Table(columns=table.columns, data=table.data)
        table.add_data(step, *sample(step))
        wandb.log({"train/generated_samples": table})
        logs = {f"train/{k}": v for k, v in {**status(step), "global_step": step}.items()}
        wandb.log(logs)
        with open(out / "log_rows.jsonl", "a") as f:
            f.write(json.dumps({"step": step, **status(step)}) + "\n")
        hold(step, a.hold_at, a.gate)
    wandb.finish()


if __name__ == "__main__":
    main()
