"""verifiers / `vf-eval -s` / `prime eval run -s`: a folder with metadata.json + results.jsonl."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_rollouts
from ._chat import last_assistant_text, messages_to_turns
from ._json import iter_jsonl, json_object
from ._names import informative, joined, short_model
from ._values import err_text, file_digest, num, short_hash, tokens

# Row keys with a known meaning; every other numeric top-level key is a reward component or a monitor.
KNOWN = {
    "example_id", "id", "prompt", "completion", "task", "answer", "info", "reward", "metrics",
    "timing", "generation_ms", "scoring_ms", "total_ms", "is_completed", "is_truncated",
    "stop_condition", "error", "token_usage", "advantage", "oai_tools", "trajectory",
}
# Monitors (counters) are not reward functions: they go to metrics, not reward_components.
_MONITOR = re.compile(r"^(num_turns|total_tool_calls|.*_calls|sub_llm_.*|.*_count|num_.*)$")


def _split_scores(row: dict[str, Any]) -> tuple[dict[str, float], dict[str, Any]]:
    comps: dict[str, float] = {}
    metrics: dict[str, Any] = {}
    sources: list[dict[str, Any]] = []
    if isinstance(row.get("metrics"), dict):
        sources.append(row["metrics"])
    sources.append({k: v for k, v in row.items() if k not in KNOWN})
    for src in sources:
        for k, v in src.items():
            f = num(v)
            if f is None:
                if v is not None:
                    metrics.setdefault(k, v)  # odd state columns: keep, never drop
                continue
            if _MONITOR.match(k) and "reward" not in k:
                metrics[k] = f
            else:
                comps[k] = f
    return comps, metrics


def _duration(row: dict[str, Any], metrics: dict[str, Any]) -> float | None:
    """Three timing shapes: top-level *_ms; timing{*_ms}; timing{total, generation{duration}, ...}."""
    t = row.get("timing")
    if isinstance(t, dict):
        if "total_ms" in t or "generation_ms" in t:
            for k in ("generation_ms", "scoring_ms"):
                if num(t.get(k)) is not None:
                    metrics[k.replace("_ms", "_s")] = num(t[k]) / 1000  # type: ignore[operator]
            total = num(t.get("total_ms"))
            return total / 1000 if total is not None else None
        for k in ("setup", "generation", "scoring"):
            part = t.get(k)
            if isinstance(part, dict) and num(part.get("duration")) is not None:
                metrics[f"{k}_s"] = num(part["duration"])
        total = num(t.get("total"))
        if total is None:
            parts = [metrics.get(f"{k}_s") for k in ("setup", "generation", "scoring")]
            total = sum(p for p in parts if p is not None) or None
        return total
    if "total_ms" in row or "generation_ms" in row:
        for k in ("generation_ms", "scoring_ms"):
            if num(row.get(k)) is not None:
                metrics[k.replace("_ms", "_s")] = num(row[k]) / 1000  # type: ignore[operator]
        total = num(row.get("total_ms"))
        return total / 1000 if total is not None else None
    return None


def row_to_rollout(row: dict[str, Any], uid: str, sample_index: int, key: str) -> RolloutRecord:
    comps, metrics = _split_scores(row)
    turns = messages_to_turns(row.get("completion"))
    r: RolloutRecord = {
        "uid": uid,
        "example_key": key,
        "prompt": row.get("prompt"),
        "sample_index": sample_index,
        "step": None,
        "reward": num(row.get("reward")),
        "reward_components": comps,
        "turns": turns,
        "final_answer": last_assistant_text(turns),
        "duration": _duration(row, metrics),
        "is_truncated": bool(row.get("is_truncated") or False),
        "stop_condition": row.get("stop_condition"),
        "error": err_text(row.get("error")),
    }
    if row.get("answer") not in (None, ""):
        r["oracle"] = str(row["answer"])
    info: dict[str, Any] = {}
    if row.get("task") is not None:
        info["task"] = row["task"]
    if row.get("info"):
        info["info"] = row["info"]
    if info:
        r["example_info"] = info
    if num(row.get("advantage")) is not None:
        r["advantage"] = num(row["advantage"])
    if "num_turns" in metrics:
        r["num_turns"] = int(metrics["num_turns"])
    usage = row.get("token_usage")
    if isinstance(usage, dict):
        r["input_tokens"] = tokens(usage.get("input_tokens", usage.get("prompt_tokens")))
        r["output_tokens"] = tokens(usage.get("output_tokens", usage.get("completion_tokens")))
    if row.get("is_completed") is not None:
        metrics["is_completed"] = bool(row["is_completed"])
    r["metrics"] = metrics
    return r


def run_record(meta: dict[str, Any], name: str, external_id: str | None = None) -> RunRecord:
    env = meta.get("env_id") or meta.get("env") or ""
    summary: dict[str, Any] = {}
    avg = dict(meta.get("avg_metrics") or {})
    for k, v in meta.items():
        if k.startswith("avg_") and k not in ("avg_reward", "avg_metrics"):
            avg[k[4:]] = v  # oldest schema: avg_<metric> keys
    if meta.get("avg_reward") is not None:
        summary["avg_reward"] = meta["avg_reward"]
    if avg:
        summary["avg_metrics"] = avg
    for k in ("pass_at_k", "pass_all_k", "usage", "cost", "date"):
        if meta.get(k) is not None:
            summary[k] = meta[k]
    if meta.get("time") is not None:
        summary["time_s"] = meta["time"]
    elif meta.get("time_ms") is not None:
        summary["time_s"] = meta["time_ms"] / 1000
    config: dict[str, Any] = {k: meta[k] for k in (
        "sampling_args", "num_examples", "rollouts_per_example", "env_args", "base_url",
        "version_info", "state_columns", "max_concurrent",
    ) if k in meta}
    consumed = set(config) | set(summary) | {"env_id", "env", "model", "time", "time_ms", "avg_reward", "avg_metrics"}
    extra = {k: v for k, v in meta.items() if k not in consumed and not k.startswith("avg_")}
    if extra:
        config["metadata_extra"] = extra
    run: RunRecord = {
        "name": name, "kind": "eval", "source": "verifiers", "status": "finished",
        "environment": str(env), "config": config, "summary": summary, "external_id": external_id or name,
    }
    if meta.get("model"):
        run["model"] = str(meta["model"])
    return run


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    if path.is_dir():
        results = path / "results.jsonl"
        meta_path = path / "metadata.json"
    else:
        results, meta_path = path, path.parent / "metadata.json"
    meta = (yield from json_object(meta_path)) if meta_path.exists() else {}
    folder = results.parent
    env = meta.get("env_id") or meta.get("env")
    # real layout: outputs/evals/<env>--<model>/<id>/; copies often name the folder <env>--<model>__<id>
    key = f"{env}--{meta.get('model')}--{folder.name}" if env and str(env) not in folder.name else folder.name
    # An upload's folder is a content hash: name the run from the metadata instead (the key stays).
    name = key if informative(folder.name) or not env else joined(
        env, short_model(meta.get("model")), str(meta.get("date") or "")[:16])
    if results.name != "results.jsonl" and not env and not informative(folder.name):
        name = key = results.stem  # a lone file (an upload's folder is a hash): its own name says what it is
    ref = "eval"
    yield RunEvent(ref, run_record(meta, name, external_id=key))
    if not results.exists():
        yield Problem(str(results), None, "results.jsonl is missing", fatal=True)
        return
    # The first line is the file's identity: re-importing the same (or a grown) file gives the same uids.
    ident = file_digest(results, first_line=True)

    def rollouts() -> Iterator[RolloutRecord | Problem]:
        seen: dict[str, int] = {}
        for item in iter_jsonl(results, partial_ok=partial_ok):
            if isinstance(item, Problem):
                yield item
                continue
            lineno, row = item
            if not isinstance(row, dict):
                yield Problem(str(results), lineno, f"expected an object, got {type(row).__name__}")
                continue
            raw_key = row.get("example_id", row.get("id"))
            key = str(raw_key) if raw_key is not None else short_hash(repr(row.get("prompt")))
            idx = seen.get(key, 0)
            seen[key] = idx + 1
            try:
                yield row_to_rollout(row, short_hash("verifiers", ident, lineno, n=32), idx, key)
            except Exception as e:  # one odd row must not stop the import
                yield Problem(str(results), lineno, f"unreadable row: {type(e).__name__}: {e}")

    yield from batch_rollouts(ref, rollouts())
