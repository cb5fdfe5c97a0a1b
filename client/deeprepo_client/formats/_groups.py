"""GRPO groups rebuilt for frameworks that write no group id, and what a step's rollouts say.

A group is the rollouts of one prompt at one step. Frameworks name it differently (verl `uid`,
ART `group_index`, AReaL `task_id`, rLLM `task_id:idx`) or not at all (verl's legacy trainer,
SkyRL, NeMo-RL): then rollouts with the identical prompt within a step are one group.

The server groups by (run, step, example_key), so the group becomes the example key: the prompt's
hash, which keeps one Example per prompt across steps; when the framework's own ids split one
prompt into several groups (the same question drawn twice in a batch) the id is appended.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..records import Event, MetricPoint, MetricsEvent, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_rollouts
from ._values import short_hash

_TOL = 1e-9


_USER_TURN = re.compile(r"(?:<\|im_start\|>|^|\n)user\n", re.S)
_SPECIAL = re.compile(r"<\|[^|>]{1,40}\|>")
LABEL_CHARS = 48


def _question(prompt: Any) -> str:
    """The last user message of a prompt: a message list, or chat text (bare role words as verl
    decodes them, or ChatML tokens as SkyRL and AReaL keep them)."""
    if isinstance(prompt, list):
        users = [m.get("content") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        text = users[-1] if users and isinstance(users[-1], str) else ""
    elif isinstance(prompt, str):
        starts = [m.end() for m in _USER_TURN.finditer(prompt)]
        text = prompt[starts[-1]:] if starts else prompt
        text = re.split(r"\nassistant\n|<\|im_end\|>", text)[0]
    else:
        text = ""
    return " ".join(_SPECIAL.sub(" ", text).split())


def prompt_key(prompt: Any) -> str:
    """A stable key for a prompt that a person can read on the groups page: the start of its
    question and a hash of the whole prompt (the hash alone decides identity)."""
    digest = short_hash(prompt if isinstance(prompt, str) else repr(prompt))
    label = _question(prompt)
    if len(label) > LABEL_CHARS:
        label = label[:LABEL_CHARS - 1].rstrip() + "…"
    return f"{label} #{digest}" if label else digest


def grpo_advantages(rewards: list[float | None]) -> list[float | None]:
    """reward - group mean, over the group's std (population), 0 for a group without variance.

    The same rule as the groups tab (analysis/grpo.py), so a framework's own advantage (verl uses
    the sample std plus an epsilon; Dr. GRPO does not divide) can be told apart from it.
    """
    known = [r for r in rewards if r is not None]
    if not known:
        return [None] * len(rewards)
    mean = sum(known) / len(known)
    if max(known) - min(known) <= _TOL:
        return [None if r is None else 0.0 for r in rewards]
    sd = math.sqrt(sum((r - mean) ** 2 for r in known) / len(known))
    return [None if r is None else (r - mean) / sd for r in rewards]


def assign_groups(rows: list[RolloutRecord], group_id: Callable[[int], str | None]) -> None:
    """Set example_key, sample_index and the recomputed advantage on one step's rollouts, in place.

    Each row's `prompt` must be set. group_id(i) is the framework's group id of row i, or None (then
    the row's group is its prompt). A group's key is its first member's prompt hash, with the
    framework's id appended when two groups of the step share a prompt.
    The framework's own advantage stays in `advantage`; ours goes to metrics['advantage_grpo'] and
    fills `advantage` only where the framework wrote none.
    """
    members: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        gid = group_id(i)
        label = f"id:{gid}" if gid is not None else f"prompt:{prompt_key(row.get('prompt'))}"
        members.setdefault(label, []).append(i)
    bases = {label: prompt_key(rows[idx[0]].get("prompt")) for label, idx in members.items()}
    shared = {b for b, n in Counter(bases.values()).items() if n > 1}
    for label, idx in members.items():
        key = bases[label]
        if key in shared and label.startswith("id:"):
            key = f"{key}#{label[3:]}"
        advs = grpo_advantages([rows[i].get("reward") for i in idx])
        for pos, (i, adv) in enumerate(zip(idx, advs, strict=True)):
            row = rows[i]
            row["example_key"] = key
            if row.get("sample_index") is None:
                row["sample_index"] = pos
            metrics = row.setdefault("metrics", {})
            metrics["advantage_grpo"] = adv
            if row.get("advantage") is None:
                row["advantage"] = adv
            else:
                metrics["advantage_framework"] = row["advantage"]


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return sum(vals) / len(vals) if vals else None


def step_point(step: int, rows: list[RolloutRecord], prefix: str = "", *, groups: bool = False) -> MetricPoint | None:
    """Reward curves from the rollouts of one step, for runs whose framework logged no metrics (the
    run page's GRPO health already draws the reward quantiles from the rollouts themselves)."""
    rewards = [float(x) for r in rows if (x := r.get("reward")) is not None]
    if not rewards:
        return None
    mean = sum(rewards) / len(rewards)
    values: dict[str, float | None] = {
        f"{prefix}reward/mean": mean,
        f"{prefix}reward/std": math.sqrt(sum((x - mean) ** 2 for x in rewards) / len(rewards)),
    }
    comps: dict[str, list[float]] = {}
    for r in rows:
        for name, v in (r.get("reward_components") or {}).items():
            comps.setdefault(name, []).append(v)
    for name, vals in comps.items():
        values[f"{prefix}components/{name}/mean"] = _mean(vals)
    if not groups:  # a train run's page draws dead groups from its rollouts already
        return {"step": step, "values": values}
    by_key: dict[str, list[float]] = {}
    for r in rows:
        if (x := r.get("reward")) is not None:
            by_key.setdefault(str(r.get("example_key")), []).append(float(x))
    sized = [g for g in by_key.values() if len(g) > 1]
    if sized:
        values[f"{prefix}groups/zero_std_frac"] = sum(1 for g in sized if max(g) - min(g) <= _TOL) / len(sized)
    return {"step": step, "values": values}


def eval_run(ref: str, run: RunRecord, step: int, rows: list[RolloutRecord], parent: str | None,
             parent_external_id: str | None = None) -> Iterator[Event]:
    """The events of an eval run of one checkpoint: linked to its train run at `step`, its reward
    figures as its summary and as one metric point (the runs table reads a run's reward curve).
    `parent` is the train run's ref in this import; `parent_external_id` finds it in the project
    when the eval part is imported on its own, after the train run."""
    point = step_point(step, rows, groups=True)
    record: RunRecord = {"kind": "eval", "status": "finished", **run, "checkpoint_step": step,
                         "summary": {**(point["values"] if point else {}), "rollouts": float(len(rows))}}
    if parent:
        record["parent_ref"] = parent
    if parent_external_id:
        record["parent_external_id"] = parent_external_id
    yield RunEvent(ref, record)
    yield from batch_rollouts(ref, rows)
    if point:
        yield MetricsEvent(ref, [point])
