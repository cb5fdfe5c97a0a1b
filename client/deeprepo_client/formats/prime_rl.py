"""prime-rl output dir: `metrics.jsonl` scalars and `rollouts/step_N/{train|eval}/.../traces.jsonl` v1 episodes.

No public sample exists; the shape follows FORMATS.md: an episode has `nodes[]` (a message graph),
`calls[]` (model calls with usage and cost), `rewards{name:{score,weight}}`, `group{id}`, `run{type,step}`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent, TurnRecord
from ._batches import batch_points, batch_rollouts, jsonl_points
from ._chat import last_assistant_text, messages_to_turns
from ._json import iter_jsonl
from ._values import err_text, num, short_hash, tokens

_STEP = re.compile(r"step_(\d+)")


def _path_messages(nodes: list[Any]) -> list[dict[str, Any]]:
    """Messages along the path root -> last node; branches off that path are not this episode's answer."""
    msgs = [n for n in nodes if isinstance(n, dict)]
    by_id = {n.get("id"): n for n in msgs if n.get("id") is not None}
    has_parents = any(n.get("parent_id", n.get("parent")) is not None for n in msgs)
    if has_parents and msgs:
        chain: list[dict[str, Any]] = []
        node: dict[str, Any] | None = msgs[-1]
        guard = 0
        while node is not None and guard <= len(msgs):
            chain.append(node)
            parent = node.get("parent_id", node.get("parent"))
            node = by_id.get(parent) if parent is not None else None
            guard += 1
        msgs = list(reversed(chain))
    return [n["message"] if isinstance(n.get("message"), dict) else n for n in msgs]


def episode_to_rollout(ep: dict[str, Any], uid: str, split: str, step_hint: int | None) -> RolloutRecord:
    msgs = _path_messages(ep.get("nodes") or [])
    first_reply = next((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), len(msgs))
    prompt, completion = msgs[:first_reply], msgs[first_reply:]
    turns: list[TurnRecord] = messages_to_turns(completion)
    comps: dict[str, float] = {}
    weighted = 0.0
    for name, rv in (ep.get("rewards") or {}).items():
        score = num(rv.get("score")) if isinstance(rv, dict) else num(rv)
        if score is None:
            continue
        comps[name] = score
        weight = num(rv.get("weight")) if isinstance(rv, dict) else 1.0
        weighted += score * (1.0 if weight is None else weight)
    reward = num(ep.get("reward"))
    if reward is None and comps:
        reward = weighted
    in_tok = out_tok = 0
    cost = 0.0
    has_cost = False
    calls = [c for c in ep.get("calls") or [] if isinstance(c, dict)]
    for c in calls:
        u = c.get("usage") or {}
        in_tok += int(num(u.get("input_tokens", u.get("prompt_tokens"))) or 0)
        out_tok += int(num(u.get("output_tokens", u.get("completion_tokens"))) or 0)
        if num(c.get("cost")) is not None:
            cost += num(c["cost"]) or 0.0
            has_cost = True
    # one model call per assistant turn, in order: give each turn its usage
    assistant_turns = [t for t in turns if t.get("role") == "assistant"]
    if len(calls) == len(assistant_turns):
        for t, c in zip(assistant_turns, calls, strict=True):
            u = c.get("usage") or {}
            t["input_tokens"] = tokens(u.get("input_tokens", u.get("prompt_tokens")))
            t["output_tokens"] = tokens(u.get("output_tokens", u.get("completion_tokens")))
            t["latency"] = num(c.get("latency", c.get("duration")))
            if c.get("model"):
                t["model"] = c["model"]
    group = ep.get("group") or {}
    run = ep.get("run") or {}
    step = num(run.get("step"))
    r: RolloutRecord = {
        "uid": uid,
        "example_key": str(group.get("id", group.get("example_id", ep.get("example_id", "")))),
        "prompt": prompt,
        "step": int(step) if step is not None else step_hint,
        "sample_index": group.get("index") if isinstance(group.get("index"), int) else None,
        "reward": reward,
        "reward_components": comps,
        "advantage": num(ep.get("advantage")),
        "turns": turns,
        "final_answer": last_assistant_text(turns),
        "input_tokens": tokens(in_tok),
        "output_tokens": tokens(out_tok),
        "cost": cost if has_cost else None,
        "error": err_text(ep.get("error")),
        "is_truncated": bool(ep.get("is_truncated") or False),
        "stop_condition": ep.get("stop_condition"),
        "duration": num(ep.get("duration")),
        "metrics": {k: v for k, v in (ep.get("metrics") or {}).items()},
    }
    if ep.get("answer") is not None:
        r["oracle"] = str(ep["answer"])
    return r


def parse_traces(files: list[Path], root: Path, partial_ok: bool, refs: dict[str, str]) -> Iterator[Event]:
    for f in files:
        rel = f.relative_to(root) if f.is_relative_to(root) else Path(f.name)
        split = "eval" if "eval" in rel.parts else "train"
        m = _STEP.search(str(rel))
        step_hint = int(m.group(1)) if m else None
        if split not in refs:
            refs[split] = split
            run = {"name": f"{root.name}-{split}" if split == "eval" else root.name, "kind": split,
                   "source": "prime-rl", "external_id": f"{root.name}:{split}", "status": "finished"}
            if split == "eval" and "train" in refs:
                run["parent_ref"] = "train"
            yield RunEvent(split, run)  # type: ignore[arg-type]

        def rollouts(f: Path = f, rel: Path = rel, split: str = split,
                     step_hint: int | None = step_hint) -> Iterator[RolloutRecord | Problem]:
            for item in iter_jsonl(f, partial_ok=partial_ok):
                if isinstance(item, Problem):
                    yield item
                    continue
                lineno, ep = item
                if not isinstance(ep, dict):
                    yield Problem(str(f), lineno, "expected an episode object")
                    continue
                try:
                    yield episode_to_rollout(ep, short_hash("prime-rl", rel, lineno, n=32), split, step_hint)
                except Exception as e:
                    yield Problem(str(f), lineno, f"unreadable episode: {type(e).__name__}: {e}")

        yield from batch_rollouts(split, rollouts())


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    refs: dict[str, str] = {}
    if path.is_file():
        with open(path, "rb") as fh:
            head = fh.read(65536)
        if path.name == "traces.jsonl" or b'"nodes"' in head:
            yield from parse_traces([path], path.parent, partial_ok, refs)
            return
        root = path.parent
        metrics_file: Path | None = path
        traces: list[Path] = []
    else:
        root = path
        metrics_file = path / "metrics.jsonl" if (path / "metrics.jsonl").exists() else None
        traces = sorted(path.glob("rollouts/**/traces.jsonl"),
                        key=lambda p: (int(m.group(1)) if (m := _STEP.search(str(p))) else -1, str(p)))
    refs["train"] = "train"
    yield RunEvent("train", {"name": root.name, "kind": "train", "source": "prime-rl", "method": "grpo",
                             "external_id": f"{root.name}:train", "status": "finished"})
    if metrics_file is not None:
        yield from batch_points("train", jsonl_points(metrics_file, partial_ok=partial_ok, time_key="time"))
    yield from parse_traces(traces, root, partial_ok, refs)
