"""A `transformers.TrainerCallback` that streams a Trainer's (or TRL GRPOTrainer's) logs to a run.

    from deeprepo_client.integrations.trl import DeeprepoCallback
    trainer = GRPOTrainer(..., callbacks=[DeeprepoCallback(project="demo", name="grpo-qwen")])

on_train_begin creates the run (or attaches to DEEPREPO_RUN_ID, set by jobs the dashboard
launched); on_log sends every numeric value at state.global_step; on_save records the checkpoint;
on_train_end stores the end-of-training row (train_runtime, train_loss ...) as the run summary
and finishes the run. Only the main process (is_world_process_zero) talks to the server.
"""

from __future__ import annotations

import math
import os
from typing import Any

from transformers import TrainerCallback

import deeprepo_client
from deeprepo_client.run import Run

# The end-of-training row repeats the last step; its keys describe the whole run.
SUMMARY_KEYS = ("train_runtime", "train_loss", "train_samples_per_second", "train_steps_per_second", "total_flos")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if hasattr(value, "item"):  # a 0-d tensor or numpy scalar
        try:
            return float(value.item())
        except (TypeError, ValueError):
            return None
    return None


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


class DeeprepoCallback(TrainerCallback):
    def __init__(self, *, project: str | None = None, name: str | None = None, run: Run | None = None,
                 tags: list[str] | None = None, notes: str = "", environment: str = "", method: str | None = None,
                 finish: bool | None = None, **init_kwargs: Any) -> None:
        """`run`: log into a run you made with deeprepo_client.init(); otherwise one is made at train begin.

        finish: mark the run finished at train end (default: only when this callback made the run).
        Other keyword arguments (url, api_key, mode, spool_dir, flush_interval ...) go to init().
        """
        self.project = project
        self.name = name
        self.run = run
        self.tags = tags
        self.notes = notes
        self.environment = environment
        self.method = method
        self._finish = finish if finish is not None else run is None
        self.init_kwargs = init_kwargs
        self.summary: dict[str, Any] = {}

    # ------------------------------------------------------------ helpers

    def _config(self, args: Any, model: Any) -> dict[str, Any]:
        config: dict[str, Any] = {}
        try:
            config["trainer"] = _jsonable(args.to_dict())
        except Exception:  # noqa: BLE001 - a config we cannot serialise must not stop training
            config["trainer"] = {}
        model_config = getattr(model, "config", None)
        if model_config is not None and hasattr(model_config, "to_dict"):
            config["model"] = _jsonable(model_config.to_dict())
        return config

    # ------------------------------------------------------------ TrainerCallback

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if not state.is_world_process_zero or self.run is not None:
            return
        model_name = ""
        if model is not None:
            model_name = str(getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__)
        method = self.method or ("grpo" if "GRPO" in type(args).__name__ else "")
        name = self.name or getattr(args, "run_name", None) or os.path.basename(str(args.output_dir).rstrip("/"))
        self.run = deeprepo_client.init(
            project=self.project, name=name, config=self._config(args, model), kind="train", model=model_name,
            environment=self.environment, method=method, tags=self.tags, notes=self.notes, **self.init_kwargs,
        )

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not state.is_world_process_zero or self.run is None or not logs:
            return
        if any(k in logs for k in SUMMARY_KEYS):
            self.summary.update({k: _jsonable(v) for k, v in logs.items()})
            self.run.update(summary=dict(self.summary))
            return
        values = {k: n for k, v in logs.items() if (n := _number(v)) is not None}
        if values:
            self.run.log(values, step=int(state.global_step))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero or self.run is None:
            return
        checkpoints = self.summary.setdefault("checkpoints", [])
        checkpoints.append({"step": int(state.global_step),
                            "path": os.path.join(str(args.output_dir), f"checkpoint-{state.global_step}")})
        self.summary["last_checkpoint_step"] = int(state.global_step)
        self.run.update(summary=dict(self.summary))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero or self.run is None:
            return
        self.summary["global_step"] = int(state.global_step)
        self.run.update(summary=dict(self.summary))
        if self._finish:
            self.run.finish("finished")
