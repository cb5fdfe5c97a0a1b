"""TRL (GRPOTrainer): trainer_state.json log_history and completions/completions_*.parquet."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RolloutRecord, RunEvent, RunRecord, TurnRecord
from ._batches import batch_points, batch_rollouts, numeric_values
from ._chat import messages_to_turns
from ._json import json_object
from ._names import informative, informative_folder, joined
from ._values import num, short_hash

# The end-of-training row repeats the last step; its keys belong in the run summary.
_SUMMARY_KEYS = ("train_runtime", "train_loss", "train_samples_per_second", "train_steps_per_second", "total_flos")
_CKPT = re.compile(r"^checkpoint-(\d+)$")
_NOT_REWARD = {"step", "prompt", "completion", "advantage", "reward", "image", "images"}


def find_state(path: Path) -> Path | None:
    """trainer_state.json itself, in the folder, or in the newest checkpoint-N/ (log_history is cumulative)."""
    if path.is_file():
        return path
    if (path / "trainer_state.json").exists():
        return path / "trainer_state.json"
    ckpts = sorted(
        ((int(m.group(1)), d) for d in path.iterdir() if d.is_dir() and (m := _CKPT.match(d.name))),
        reverse=True,
    )
    for _, d in ckpts:
        if (d / "trainer_state.json").exists():
            return d / "trainer_state.json"
    return None


def _output_dir(state: Path | None, path: Path) -> Path:
    if path.is_dir():
        return path
    d = path.parent
    return d.parent if _CKPT.match(d.name) else d


def _points(history: list[Any], summary: dict[str, Any]) -> Iterator[MetricPoint]:
    for row in history:
        if not isinstance(row, dict):
            continue
        if any(k in row for k in _SUMMARY_KEYS):
            summary.update({k: v for k, v in row.items() if k != "step"})
            continue
        step = num(row.get("step"))
        if step is None:
            continue
        # eval rows keep their eval_ prefix, so train `loss` and `eval_loss` stay separate series
        values = numeric_values(row, skip=("step",))
        if values:
            yield {"step": int(step), "values": values}


def _clean(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _completions(folder: Path) -> Iterator[RolloutRecord | Problem]:
    files = sorted(folder.glob("completions_*.parquet"))
    if not files:
        return
    try:
        import pyarrow.parquet as pq  # optional: only needed for completions
    except ImportError:
        yield Problem(str(folder), None, "completions are parquet files: install pyarrow (deeprepo-client[parquet]) to read them")
        return
    for f in files:
        try:
            pf = pq.ParquetFile(f)
            counters: dict[tuple[Any, str], int] = {}
            row_index = 0
            for batch in pf.iter_batches(batch_size=512):
                for row in batch.to_pylist():
                    yield _rollout(row, f.name, row_index, counters)
                    row_index += 1
        except Exception as e:
            yield Problem(str(f), None, f"unreadable parquet: {type(e).__name__}: {e}")


def _rollout(row: dict[str, Any], fname: str, index: int, counters: dict[tuple[Any, str], int]) -> RolloutRecord:
    prompt, completion = row.get("prompt"), row.get("completion")
    prompt_text = prompt if isinstance(prompt, str) else repr(prompt)
    key = hashlib.sha256(prompt_text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    step = int(row["step"]) if num(row.get("step")) is not None else None
    idx = counters.get((step, key), 0)
    counters[(step, key)] = idx + 1
    comps = {k: f for k, v in row.items() if k not in _NOT_REWARD and (f := num(_clean(v))) is not None}
    reward = num(_clean(row.get("reward")))
    if reward is None and comps:
        reward = sum(comps.values())  # TRL sums the (weighted) reward functions; weights are not in the file
    turns: list[TurnRecord] = (messages_to_turns(completion) if isinstance(completion, list)
                               else [{"role": "assistant", "content": completion}])
    return {
        "uid": short_hash("trl", fname, index, n=32),
        "example_key": key,
        "prompt": prompt,
        "step": step,
        "sample_index": idx,
        "reward": reward,
        "reward_components": comps,
        "advantage": num(_clean(row.get("advantage"))),
        "turns": turns,
        "final_answer": completion if isinstance(completion, str) else None,
    }


def _name(out: Path, state: dict[str, Any]) -> str:
    """The output folder's name, or (for `out`, `trl`, an upload's hash) the one in best_model_checkpoint,
    a parent's, or what the state says: TRL GRPO and its last step."""
    if informative(out.name):
        return out.name
    best = state.get("best_model_checkpoint")
    if isinstance(best, str) and best and (found := informative_folder(Path(best))):
        return found
    if informative(out.parent.name):  # runs/qwen-grpo/out; no higher (an upload sits in the data dir)
        return out.parent.name
    step = state.get("global_step")
    return joined("trl-grpo", f"step {step}" if isinstance(step, int) else "")


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    state_path = find_state(path)
    out = _output_dir(state_path, path)
    state = (yield from json_object(state_path)) if state_path is not None else {}
    summary: dict[str, Any] = {}
    for k in ("global_step", "best_metric", "best_model_checkpoint", "epoch", "total_flos"):
        if state.get(k) is not None:
            summary[k] = state[k]
    config = {k: v for k, v in state.items() if k not in ("log_history", "global_step", "best_metric",
                                                          "best_model_checkpoint", "epoch", "total_flos")}
    run: RunRecord = {"name": _name(out, state), "kind": "train", "source": "trl", "method": "grpo",
                      "status": "finished", "config": config, "summary": summary, "external_id": out.name}
    raw_history = state.get("log_history")
    history: list[Any] = raw_history if isinstance(raw_history, list) else []
    # log_history is already in memory; collect the points first so the summary row lands in the RunEvent
    points = list(_points(history, summary))
    ref = "train"
    yield RunEvent(ref, run)
    yield from batch_points(ref, points)
    comp_dir = out / "completions" if (out / "completions").is_dir() else out
    yield from batch_rollouts(ref, _completions(comp_dir))
