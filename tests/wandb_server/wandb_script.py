"""A training script as a user writes it with the wandb SDK; run in its own process (and, for the
older SDK versions, its own venv) with WANDB_BASE_URL pointing at a live server.

argv[1]: a JSON spec: {"id", "project", "name", "steps", "resume", "exit_code", "table", "image",
"alert", "start", "nan", "print", "keys", "shared": "primary"|"secondary", "x_label"}.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import wandb


def main() -> None:
    spec = json.loads(sys.argv[1])
    kwargs = {"project": spec.get("project", "rl-demo"), "id": spec["id"], "config": spec.get("config"),
              "tags": spec.get("tags"), "notes": spec.get("notes"), "group": spec.get("group"),
              "job_type": spec.get("job_type"), "name": spec.get("name")}
    if spec.get("resume"):
        kwargs["resume"] = spec["resume"]
    if spec.get("shared"):
        kwargs["settings"] = wandb.Settings(mode="shared", x_primary=spec["shared"] == "primary",
                                            x_label=spec.get("x_label"), x_update_finish_state=spec["shared"] == "primary")
    run = wandb.init(**{k: v for k, v in kwargs.items() if v is not None})
    if spec.get("define_metric"):
        wandb.define_metric("eval/*", step_metric="eval_step")
    start = spec.get("start", 0)
    keys = spec.get("keys", ["loss", "reward"])
    for i in range(start, start + spec.get("steps", 0)):
        values = {k: (i + 1) * (n + 1) / 10 for n, k in enumerate(keys)}
        if spec.get("nan") and i == start:
            values.update({"loss": math.nan, "reward": math.inf})
        if spec.get("print"):
            print(f"step {i} loss {values[keys[0]]}", flush=True)
        wandb.log(values, step=i) if spec.get("explicit_step") else wandb.log(values)
        if spec.get("sleep"):
            time.sleep(spec["sleep"])  # a training step takes time
        if spec.get("define_metric") and i % 2 == 1:
            wandb.log({"eval/acc": i / 100, "eval_step": i // 2})
    if spec.get("table"):
        rows = spec["table"]
        table = wandb.Table(columns=["prompt", "completion", "reward"], data=rows)
        wandb.log({"samples": table})
    if spec.get("image"):
        import numpy as np

        pixels = (np.arange(16 * 16 * 3) % 255).reshape(16, 16, 3).astype("uint8")
        wandb.log({"board": wandb.Image(pixels, caption="board")})
    if spec.get("artifact"):  # a checkpoint, as users log them
        path = Path(wandb.run.dir) / "model.bin"
        path.write_bytes(b"weights" * 100)
        artifact = wandb.Artifact("policy", type="model")
        artifact.add_file(str(path))
        run.log_artifact(artifact)
    if spec.get("summary"):
        run.summary.update(spec["summary"])
    if spec.get("alert"):
        wandb.alert(title=spec["alert"], text="reward collapsed")
    step = start + spec.get("steps", 0)
    while spec.get("interactive"):  # the test says when to log the next step, and when to stop
        if sys.stdin.readline().strip() != "log":
            break
        print(f"step {step} loss {(step + 1) / 10}", flush=True)
        wandb.log({k: (step + 1) * (n + 1) / 10 for n, k in enumerate(keys)})
        step += 1
    if spec.get("hold"):
        print("SCRIPT-HOLDING", flush=True)
        sys.stdin.readline()  # the test says when to finish (another writer logs meanwhile)
    code = spec.get("exit_code", 0)
    wandb.finish(exit_code=code)
    print("SCRIPT-DONE", run.id, flush=True)


if __name__ == "__main__":
    main()
