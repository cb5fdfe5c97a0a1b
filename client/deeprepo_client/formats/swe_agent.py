"""SWE-agent: `.traj` trajectories (one instance each) and `all_preds.jsonl` (a patch per instance)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent, RunRecord, ToolCallRecord, TurnRecord
from ._batches import batch_rollouts
from ._json import iter_jsonl, load_json
from ._names import informative, joined, short_model
from ._patches import patch_touches_tests
from ._values import maybe_json, num, short_hash, tokens

# Suffixes SWE-agent appends to an instance id in file names and keys (the tool-calling config's name;
# `.traj` of `x.traj.json`): the example is the SWE-bench instance, shared with its SWE-bench report.
_KEY_SUFFIXES = (".traj", ".function_calling")


def instance_key(name: str) -> str:
    """`django__django-11099.function_calling` -> `django__django-11099`."""
    changed = True
    while changed:
        changed = False
        for suffix in _KEY_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name, changed = name[: -len(suffix)], True
    return name


def _prompt(history: list[Any]) -> list[dict[str, Any]]:
    """The system message and the first real (non-demo) user message; everything after repeats per step."""
    out: list[dict[str, Any]] = []
    for h in history:
        if not isinstance(h, dict) or h.get("is_demo"):
            continue
        if h.get("role") == "system" and not out:
            out.append({"role": "system", "content": h.get("content")})
        elif h.get("role") == "user":
            out.append({"role": "user", "content": h.get("content")})
            break
    return out


def _step_stats(step: dict[str, Any]) -> dict[str, Any] | None:
    for holder in (step, step.get("extra_info") or {}, step.get("info") or {}):
        ms = holder.get("model_stats") if isinstance(holder, dict) else None
        if isinstance(ms, dict):
            return ms
    return None


def traj_to_rollout(t: dict[str, Any], instance_id: str, ident: str) -> RolloutRecord:
    info = t.get("info") or {}
    stats = info.get("model_stats") or {}
    turns: list[TurnRecord] = []
    prev_sent = prev_recv = 0.0
    total_exec = 0.0
    for step in t.get("trajectory") or []:
        if not isinstance(step, dict):
            continue
        action = step.get("action") or ""
        name = action.strip().split(None, 1)[0] if action.strip() else "noop"
        call: ToolCallRecord = {"name": name, "arguments": {"command": action}, "output": step.get("observation")}
        ex = num(step.get("execution_time"))
        if ex is not None:
            call["duration"] = ex
            total_exec += ex
        thought = step.get("thought")
        turn: TurnRecord = {"role": "assistant", "content": thought if thought is not None else step.get("response"),
                            "tool_calls": [call]}
        if step.get("response") and step.get("response") != thought:
            turn["metadata"] = {"response": step["response"]}
        st = maybe_json(step.get("state"))
        if st:
            turn.setdefault("metadata", {})["state"] = st
        ms = _step_stats(step)
        if ms:  # cumulative counters: the difference is this step's usage
            sent, recv = num(ms.get("tokens_sent")) or 0.0, num(ms.get("tokens_received")) or 0.0
            turn["input_tokens"] = tokens(sent - prev_sent)
            turn["output_tokens"] = tokens(recv - prev_recv)
            prev_sent, prev_recv = sent, recv
        turns.append(turn)
    patch = info.get("submission")
    metrics: dict[str, Any] = {k: v for k, v in stats.items() if k not in ("tokens_sent", "tokens_received", "instance_cost")}
    if patch:
        metrics["touches_tests"] = patch_touches_tests(patch)
    for k in ("exit_status", "edited_files30", "review"):
        if info.get(k) is not None:
            metrics[k] = info[k]
    exit_status = info.get("exit_status")
    r: RolloutRecord = {
        "uid": short_hash("swe_agent", ident, instance_id, n=32),  # of the file's own name: re-imports match
        "example_key": instance_key(instance_id),
        "prompt": _prompt(t.get("history") or []),
        "sample_index": 0,
        "turns": turns,
        "final_answer": patch,
        "input_tokens": tokens(stats.get("tokens_sent")),
        "output_tokens": tokens(stats.get("tokens_received")),
        "cost": num(stats.get("instance_cost")),
        "stop_condition": exit_status,
        "duration": total_exec or None,
        "metrics": metrics,
    }
    if isinstance(exit_status, str) and ("error" in exit_status.lower() or "exception" in exit_status.lower()):
        r["error"] = exit_status
    if isinstance(exit_status, str) and "cost" in exit_status.lower():
        r["is_truncated"] = True
    return r


def _model_from(t: dict[str, Any], folder: Path) -> str:
    cfg = maybe_json(t.get("replay_config"))
    if isinstance(cfg, dict):
        model = (cfg.get("agent") or {}).get("model") or {}
        if isinstance(model, dict) and model.get("name"):
            return str(model["name"])
        if isinstance(model, dict) and model.get("model_name"):
            return str(model["model_name"])
    return folder.name.split("__", 1)[0] if "__" in folder.name else ""


def parse_traj(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    files = sorted(path.glob("**/*.traj")) if path.is_dir() else [path]
    folder = path if path.is_dir() else path.parent
    ref = "eval"
    started = False
    batch: list[RolloutRecord] = []
    for f in files:
        t, problem = load_json(f)
        if problem:
            yield problem
            continue
        if not isinstance(t, dict):
            yield Problem(str(f), None, "not a trajectory object")
            continue
        if not started:
            model = _model_from(t, folder)
            name = folder.name if informative(folder.name) else joined(
                "swe-agent", short_model(model),
                instance_key(f.stem) if len(files) == 1 else f"{len(files)} instances")
            run: RunRecord = {"name": name, "kind": "eval", "source": "swe_agent", "status": "finished",
                              "model": model, "external_id": folder.name,
                              "config": {"environment": t.get("environment")}}
            yield RunEvent(ref, run)
            started = True
        try:
            batch.append(traj_to_rollout(t, f.stem, folder.name))
        except Exception as e:
            yield Problem(str(f), None, f"unreadable trajectory: {type(e).__name__}: {e}")
    if batch:
        yield from batch_rollouts(ref, batch)


def parse_preds(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    ref = "eval"
    started = False

    def rollouts() -> Iterator[RolloutRecord | Problem | RunEvent]:
        for item in iter_jsonl(path, partial_ok=partial_ok):
            if isinstance(item, Problem):
                yield item
                continue
            lineno, row = item
            if not isinstance(row, dict) or not row.get("instance_id"):
                yield Problem(str(path), lineno, "expected an object with instance_id")
                continue
            patch = row.get("model_patch")
            yield {
                "uid": short_hash("swe_preds", row.get("model_name_or_path"), row["instance_id"], n=32),
                "example_key": instance_key(str(row["instance_id"])),
                "sample_index": 0,
                "final_answer": patch,
                "metrics": {"touches_tests": patch_touches_tests(patch or ""), "empty_patch": not patch,
                            **{k: v for k, v in row.items() if k not in ("instance_id", "model_patch")}},
            }

    for item in batch_rollouts(ref, rollouts()):  # type: ignore[arg-type]
        if not started:
            model = None
            if not isinstance(item, Problem):
                model = item.rollouts[0]["metrics"].get("model_name_or_path")  # type: ignore[union-attr]
            name = str(model or path.parent.name)
            yield RunEvent(ref, {"name": name, "kind": "eval", "source": "swe_agent", "status": "finished",
                                 "model": name.split("__", 1)[0], "external_id": name})
            started = True
        yield item
    if not started:
        yield RunEvent(ref, {"name": path.parent.name, "kind": "eval", "source": "swe_agent"})

