"""AReaL rollout dumps (`rollout.dump_to_file`): `{fileroot}/logs/{user}/{experiment}/{trial}/
rollout/{version}/{task_id}.jsonl`, and `eval-rollout/` for evaluation.

A line is one sample: `task_id, sample_idx, seqlen, prompt_len, head_version, tail_version, reward,
prompt, completion`. The version folder is the policy version, i.e. the training step; a task's
file is one GRPO group. Files are appended to (a re-dumped task adds lines), so a rollout's uid is
its line. AReaL logs no metrics beside the dumps: reward curves are computed from them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricsEvent, Problem, RolloutRecord, RunEvent
from ._batches import batch_rollouts
from ._groups import assign_groups, eval_run, step_point
from ._stepfiles import file_times, read_rows
from ._unread import unread
from ._values import num, short_hash, tokens

LINE_KEYS = frozenset({"task_id", "sample_idx", "head_version", "tail_version"})
SPLITS = {"rollout": "train", "eval-rollout": "eval"}


def is_line(keys: set[str]) -> bool:
    return LINE_KEYS <= keys


def looks_like_trial(path: Path) -> bool:
    return any((path / s).is_dir() and any(d.name.isdigit() for d in (path / s).iterdir()) for s in SPLITS)


def _rollout(row: dict[str, Any], uid: str, version: int) -> RolloutRecord:
    completion = row.get("completion")
    seqlen, prompt_len = num(row.get("seqlen")), num(row.get("prompt_len"))
    out_tokens = int(seqlen - prompt_len) if seqlen is not None and prompt_len is not None else None
    r: RolloutRecord = {
        "uid": uid,
        "prompt": row.get("prompt"),
        "step": version,
        "reward": num(row.get("reward")),
        "sample_index": row["sample_idx"] if isinstance(row.get("sample_idx"), int) else None,
        "turns": [{"role": "assistant", "content": completion if isinstance(completion, str) else str(completion)}],
        "final_answer": completion if isinstance(completion, str) else None,
        "input_tokens": tokens(prompt_len),
        "output_tokens": tokens(out_tokens),
        "metrics": {k: row[k] for k in ("task_id", "head_version", "tail_version", "seqlen") if k in row},
    }
    return r


def _version(trial: Path, folder: str, version: int, partial_ok: bool) -> tuple[list[RolloutRecord], list[Problem]]:
    d = trial / folder / str(version)
    rollouts: list[RolloutRecord] = []
    problems: list[Problem] = []
    tasks: list[str] = []
    files = sorted(d.glob("*.jsonl"), key=lambda f: (not f.stem.isdigit(), int(f.stem) if f.stem.isdigit() else 0, f.name))
    for f in files:
        rows, probs = read_rows(f, partial_ok=partial_ok)
        problems.extend(probs)
        for lineno, row in rows:
            if not is_line(set(row)):
                problems.append(Problem(str(f), lineno, "not an AReaL dump line: no task_id / sample_idx / versions"))
                continue
            rollouts.append(_rollout(row, short_hash("areal", folder, version, f.name, lineno, n=32), version))
            tasks.append(str(row.get("task_id", f.stem)))
    assign_groups(rollouts, lambda i: tasks[i])
    return rollouts, problems


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    trial = path
    if path.is_file():  # one task's file: .../rollout/{version}/{task}.jsonl
        trial = path.parent.parent.parent
    parts = trial.parts
    name = "/".join(parts[-2:]) if len(parts) >= 2 else trial.name  # experiment/trial
    train_ref = "train"
    has_train = (trial / "rollout").is_dir()
    if has_train:
        yield RunEvent(train_ref, {"name": name, "kind": "train", "source": "areal", "status": "finished",
                                   "external_id": f"{name}:train",
                                   **file_times(list((trial / "rollout").glob("*/*.jsonl")))})  # type: ignore[typeddict-item]
    read: list[Path] = []
    for folder, split in SPLITS.items():
        base = trial / folder
        if not base.is_dir():
            continue
        versions = sorted(int(d.name) for d in base.iterdir() if d.is_dir() and d.name.isdigit())
        for version in versions:
            read.extend((base / str(version)).glob("*.jsonl"))
            rollouts, problems = _version(trial, folder, version, partial_ok)
            yield from problems
            if not rollouts:
                continue
            point = step_point(version, rollouts)
            if split == "train":
                yield from batch_rollouts(train_ref, rollouts)
                if point:
                    yield MetricsEvent(train_ref, [point])
                continue
            yield from eval_run(f"eval/{version}", {
                "name": f"{name} · eval version {version}", "source": "areal",
                "external_id": f"{name}:eval:{version}"}, version, rollouts, train_ref if has_train else None,
                f"{name}:train")
    if path.is_dir():
        yield from unread(trial, read, "an AReaL trial (rollout/<version>/, eval-rollout/<version>/)", partial_ok=partial_ok)
