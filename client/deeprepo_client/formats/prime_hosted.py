"""Prime Intellect hosted training export: metadata.json, metrics_raw.json, results.jsonl / rollouts_raw.json."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_points, batch_rollouts, numeric_values
from ._chat import last_assistant_text, messages_to_turns
from ._json import iter_jsonl, json_object, load_json
from ._values import err_text, maybe_json, num, parse_time, short_hash, tokens
from .verifiers import _duration, _split_scores

_STATUS = {"completed": "finished", "failed": "failed", "running": "running", "queued": "queued",
           "pending": "queued", "cancelled": "cancelled", "stopped": "cancelled", "crashed": "crashed"}


def _run_record(folder: Path, meta: dict[str, Any], extras: dict[str, Any]) -> RunRecord:
    run: dict[str, Any] = meta["run"] if isinstance(meta.get("run"), dict) else meta
    envs = run.get("environments") or []
    env = envs[0].get("id") if envs and isinstance(envs[0], dict) else None
    rec: RunRecord = {
        "name": str(run.get("name") or run.get("id") or folder.name),
        "kind": "train",
        "source": "prime",
        "method": "grpo",
        "status": _STATUS.get(str(run.get("status", "")).lower(), str(run.get("status") or "finished").lower()),
        "config": {k: v for k, v in run.items() if k not in ("name", "status", "created_at", "started_at",
                                                                "completed_at", "updated_at")},
        "summary": extras,
        "started_at": parse_time(run.get("started_at") or run.get("created_at")),
        "finished_at": parse_time(run.get("completed_at")),
    }
    if run.get("id"):
        rec["external_id"] = str(run["id"])
    if run.get("base_model"):
        rec["model"] = str(run["base_model"])
    if env:
        rec["environment"] = str(env)
    return rec


def _rollout(row: dict[str, Any], run_id: str) -> RolloutRecord:
    decoded = {k: maybe_json(row.get(k)) for k in ("prompt", "completion", "metrics", "timing", "info")}
    scores = dict(decoded["metrics"]) if isinstance(decoded["metrics"], dict) else {}
    comps, metrics = _split_scores({"metrics": scores})
    duration = _duration({"timing": decoded["timing"]}, metrics) if isinstance(decoded["timing"], dict) else None
    turns = messages_to_turns(decoded["completion"])
    key = str(row.get("problem_id", row.get("example_id", "")))
    r: RolloutRecord = {
        "uid": short_hash("prime", run_id, row.get("step"), key, row.get("sample_id"), n=32),
        "example_key": key,
        "prompt": decoded["prompt"],
        "step": int(row["step"]) if num(row.get("step")) is not None else None,
        "sample_index": row.get("sample_id") if isinstance(row.get("sample_id"), int) else None,
        "reward": num(row.get("reward")),
        "reward_components": comps,
        "advantage": num(row.get("advantage")),
        "input_tokens": tokens(row.get("num_input_tokens")),
        "output_tokens": tokens(row.get("num_output_tokens")),
        "turns": turns,
        "final_answer": last_assistant_text(turns),
        "duration": duration,
        "error": err_text(row.get("error")),
        "metrics": metrics,
    }
    if "num_turns" in metrics:
        r["num_turns"] = int(metrics["num_turns"])
    if row.get("answer") not in (None, ""):
        r["oracle"] = str(row["answer"])
    info = {k: v for k, v in (("task", row.get("task")), ("env_name", row.get("env_name")),
                              ("info", decoded["info"])) if v not in (None, "")}
    if info:
        r["example_info"] = info
    for k in ("tag", "created_at", "is_truncated", "stop_condition"):
        if row.get(k) not in (None, ""):
            metrics[k] = row[k]
    if row.get("is_truncated"):
        r["is_truncated"] = True
    if row.get("stop_condition"):
        r["stop_condition"] = str(row["stop_condition"])
    return r


def _points(rows: list[Any], display: str) -> Iterator[MetricPoint | Problem]:
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or num(row.get("step")) is None:
            yield Problem(display, None, f"metrics entry {i} has no step")
            continue
        yield {"step": int(row["step"]), "time": parse_time(row.get("timestamp") or row.get("time")),
               "values": numeric_values(row, skip=("step", "timestamp", "time", "run_id"))}


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    folder = path if path.is_dir() else path.parent
    mp = folder / "metadata.json"
    meta = (yield from json_object(mp)) if mp.exists() else {}
    extras: dict[str, Any] = {}
    for name in ("usage.json", "progress.json", "run_manifest.json", "metrics_summary.json"):
        p = folder / name
        if p.exists():
            loaded, problem = load_json(p)
            if problem:
                yield problem
            elif loaded is not None:
                if name == "metrics_summary.json" and isinstance(loaded, dict) and isinstance(loaded.get("metrics"), dict):
                    loaded = dict(loaded, metrics={k: v for k, v in loaded["metrics"].items() if v is not None})
                extras[name.removesuffix(".json")] = loaded
    ref = "train"
    run = _run_record(folder, meta, extras)
    run_id = run.get("external_id") or folder.name
    yield RunEvent(ref, run)

    mr = folder / "metrics_raw.json"
    if mr.exists():
        loaded, problem = load_json(mr)
        if problem:
            yield problem
        else:
            rows = loaded.get("metrics") if isinstance(loaded, dict) else loaded
            yield from batch_points(ref, _points(rows if isinstance(rows, list) else [], str(mr)))

    seen: set[str] = set()  # results.jsonl and rollouts_raw.json often hold the same page

    def once(row: Any, where: str, lineno: int | None, what: str) -> Iterator[RolloutRecord | Problem]:
        """The row as a rollout, unless an earlier file already gave it; a bad row is a Problem."""
        try:
            r = _rollout(row, run_id)
        except Exception as e:
            yield Problem(where, lineno, f"{what}: {type(e).__name__}: {e}")
            return
        if r["uid"] not in seen:
            seen.add(r["uid"])
            yield r

    def rollouts() -> Iterator[RolloutRecord | Problem]:
        res = folder / "results.jsonl"
        if res.exists():
            for item in iter_jsonl(res, partial_ok=partial_ok):
                if isinstance(item, Problem):
                    yield item
                    continue
                lineno, row = item
                if not isinstance(row, dict):
                    yield Problem(str(res), lineno, "expected an object")
                    continue
                yield from once(row, str(res), lineno, "unreadable row")
        raw = folder / "rollouts_raw.json"
        if raw.exists():
            loaded, problem = load_json(raw)
            if problem:
                yield problem
                return
            samples = loaded.get("samples") if isinstance(loaded, dict) else loaded
            for i, row in enumerate(samples or []):
                yield from once(row, str(raw), None, f"sample {i}")

    yield from batch_rollouts(ref, rollouts())
