"""OpenPipe ART: a model folder `{project}/models/{model}/` with `trajectories/{split}/{step:04d}.parquet`
(one row per trajectory, v2 columns) and `history.jsonl` (one flat metrics object per `log()` call).

`train` trajectories are the train run's rollouts; every other split (`val`) becomes an eval run per
step, linked to the train run at that step. Groups are ART's own `group_index` within a step file.
Older ART wrote trajectories as YAML / JSONL; no real file of those was available, so they are not read.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricsEvent, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_points, batch_rollouts, jsonl_points
from ._chat import last_assistant_text, messages_to_turns
from ._groups import assign_groups, eval_run, step_point
from ._stepfiles import SETTLE_SECONDS, already_sent, file_times, read_whole
from ._unread import unread
from ._values import maybe_json, num, parse_time, short_hash

STEP_FILE = re.compile(r"^(\d+)\.parquet$")


def is_history_line(keys: set[str]) -> bool:
    return "recorded_at" in keys and "step" in keys


def looks_like_model_dir(path: Path) -> bool:
    traj = path / "trajectories"
    if traj.is_dir() and any(STEP_FILE.match(f.name) for d in traj.iterdir() if d.is_dir() for f in d.iterdir()):
        return True
    return (path / "history.jsonl").is_file() and (path / "state.json").is_file()


def _message(m: dict[str, Any]) -> dict[str, Any]:
    """A parquet message struct as an OpenAI message (tool_calls is a JSON string there)."""
    out = {k: v for k, v in m.items() if v is not None}
    if isinstance(out.get("tool_calls"), str):
        out["tool_calls"] = maybe_json(out["tool_calls"])
    return out


def _rollout(row: dict[str, Any], uid: str, step: int) -> RolloutRecord:
    msgs = [_message(m) for m in row.get("messages") or [] if isinstance(m, dict)]
    first_reply = next((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), len(msgs))
    turns = messages_to_turns(msgs[first_reply:])
    metrics = maybe_json(row.get("metrics"))
    metrics = dict(metrics) if isinstance(metrics, dict) else {}
    for k in ("metadata", "logs", "group_logs", "group_metrics"):
        v = maybe_json(row.get(k))
        if v not in (None, [], {}):
            metrics[k] = v
    info = {k: v for k in ("group_metadata", "tools") if (v := maybe_json(row.get(k))) is not None}
    r: RolloutRecord = {
        "uid": uid,
        "prompt": msgs[:first_reply],
        "step": step,
        "reward": num(row.get("reward")),
        "turns": turns,
        "final_answer": last_assistant_text(turns),
        "metrics": metrics,
        "example_info": info,
    }
    if num(metrics.get("num_turns")) is not None:
        r["num_turns"] = int(metrics["num_turns"])
    if isinstance(row.get("trajectory_index"), int):
        r["sample_index"] = row["trajectory_index"]
    return r


def _read_step(f: Path, model: str, split: str, step: int, partial_ok: bool) -> tuple[list[RolloutRecord], list[Problem]]:
    if already_sent(f) or (partial_ok and time.time() - f.stat().st_mtime < SETTLE_SECONDS):
        return [], []  # watch: sent already, or ART may still be writing it
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return [], [Problem(str(f), None, "ART trajectories are parquet: install pyarrow (deeprepo-client[parquet])")]
    try:
        rows = pq.read_table(f).to_pylist()
    except Exception as e:  # a file still being written or damaged: pyarrow says which
        if partial_ok:
            return [], []  # a parquet file being written has no footer yet: next pass
        return [], [Problem(str(f), None, f"unreadable parquet: {type(e).__name__}: {e}")]
    read_whole(f)
    out = [_rollout(row, short_hash("art", model, split, step, i, n=32), step) for i, row in enumerate(rows)]
    groups = [row.get("group_index") for row in rows]
    assign_groups(out, lambda i: None if groups[i] is None else str(groups[i]))
    return out, []


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    folder = path if path.is_dir() else path.parent
    model = folder.name
    project = folder.parent.parent.name if folder.parent.name == "models" else ""
    run: RunRecord = {"name": model, "kind": "train", "source": "art", "status": "finished",
                      "external_id": f"{project}/{model}", "config": {"project": project} if project else {}}
    run.update(file_times([folder / "history.jsonl", *folder.glob("trajectories/*/*.parquet")]))  # type: ignore[typeddict-item]
    summary, problems = _state(folder / "state.json")
    if summary:
        run["summary"] = summary
    yield from problems
    yield RunEvent("train", run)
    read = [folder / "history.jsonl", folder / "state.json"]
    history = folder / "history.jsonl"
    if history.is_file():
        yield from batch_points("train", jsonl_points(history, partial_ok=partial_ok, time_key="recorded_at", time=parse_time))
    traj = folder / "trajectories"
    splits = sorted(d for d in traj.iterdir() if d.is_dir()) if traj.is_dir() else []
    for d in sorted(splits, key=lambda d: d.name != "train"):
        files = sorted((int(m.group(1)), f) for f in d.iterdir() if (m := STEP_FILE.match(f.name)))
        read.extend(f for _, f in files)
        for step, f in files:
            rollouts, problems = _read_step(f, run["external_id"], d.name, step, partial_ok)
            yield from problems
            if not rollouts:
                continue
            if d.name == "train":
                yield from batch_rollouts("train", rollouts)
                point = None if history.is_file() else step_point(step, rollouts)
                if point:
                    yield MetricsEvent("train", [point])
                continue
            yield from eval_run(f"{d.name}/{step}", {
                "name": f"{model} · {d.name} step {step}", "source": "art",
                "external_id": f"{project}/{model}:{d.name}:{step}"}, step, rollouts, "train", run["external_id"])
    if path.is_dir():
        yield from unread(folder, read, "an ART model folder (history.jsonl, state.json, trajectories/<split>/NNNN.parquet)",
                          partial_ok=partial_ok)


def _state(path: Path) -> tuple[dict[str, float], list[Problem]]:
    """state.json's cumulative counters (`data/cum/num_trajectories`, …): the train run's summary."""
    if not path.is_file():
        return {}, []
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return {}, [Problem(str(path), None, f"unreadable ART state.json: {e}")]
    builder = state.get("_metrics_builder_state") if isinstance(state, dict) else None
    cum = builder.get("cum_state") if isinstance(builder, dict) else None
    if not isinstance(cum, dict):
        return {}, []
    return {str(k): f for k, v in cum.items() if (f := num(v)) is not None}, []
