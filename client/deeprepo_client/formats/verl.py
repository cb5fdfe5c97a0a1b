"""verl: rollout / validation dumps (`{dir}/{global_steps}.jsonl`) and the `file` tracker's metrics.

Dump lines (ray_trainer `_dump_generations`, every generation): `input`, `output`, `score`, `step`,
newer `gts`, then every reward_extra_info key whose list matched the batch (`acc`, `pred`, `reward`,
`request_id`, `uid`, ...). Numeric extras are reward components; the rest goes to metrics.
Tracker lines: `{"step": N, "data": {flat metrics}}`. An agent loop's `output` (tool tags in the text) is split
into turns by `_transcript.py`; the raw text stays in metrics `raw_output`.

An output folder becomes a train run (rollout dumps + tracker metrics) and one eval run per
validation step, linked to the train run at that step. Which dump folder is validation is known
only from its name (`trainer.validation_data_dir`, e.g. `validation_data`, `val_generations`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, MetricsEvent, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_points, batch_rollouts
from ._groups import assign_groups, eval_run, step_point
from ._json import iter_jsonl, loads
from ._stepfiles import file_times, read_rows
from ._transcript import MARKERS, final_text, split_agent_text
from ._unread import unread
from ._values import num, short_hash

DUMP_KEYS = frozenset({"input", "output", "score", "step"})
STEP_FILE = re.compile(r"^(\d+)\.jsonl$")
_VAL_DIR = re.compile(r"(^|[^a-z])(val|valid|validation|eval|test)", re.I)
_NOT_EXTRA = DUMP_KEYS | {"gts", "advantage"}
MAX_TRACKER_DEPTH = 3


def is_dump_line(keys: set[str]) -> bool:
    return DUMP_KEYS <= keys


def is_tracker_line(keys: set[str]) -> bool:
    return keys == {"step", "data"}


def _first_keys(path: Path) -> set[str]:
    try:
        with open(path, "rb") as f:
            obj = loads(f.readline(1 << 22))
    except (OSError, ValueError):
        return set()
    return set(obj) if isinstance(obj, dict) else set()


def step_files(folder: Path) -> list[tuple[int, Path]]:
    """The `{step}.jsonl` dumps directly in `folder`, by step (empty when it holds none of verl's)."""
    found = sorted((int(m.group(1)), p) for p in folder.iterdir()
                   if (m := STEP_FILE.match(p.name)) and p.is_file())
    if found and is_dump_line(_first_keys(found[0][1])):
        return found
    # the lowest step may be a file still being written: look at the next one
    if len(found) > 1 and is_dump_line(_first_keys(found[1][1])):
        return found
    return []


def _trackers(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            children = sorted(folder.iterdir())
        except OSError:
            continue
        for c in children:
            if c.name.startswith("."):
                continue
            if c.is_dir() and depth < MAX_TRACKER_DEPTH:
                stack.append((c, depth + 1))
            elif c.suffix == ".jsonl" and not STEP_FILE.match(c.name) and is_tracker_line(_first_keys(c)):
                out.append(c)
    return out


def looks_like_output_dir(path: Path) -> bool:
    """A dump folder, a folder whose direct subfolders hold dumps, or one holding a tracker file
    (a job's output folder before its first dump: VERL_FILE_LOGGER_PATH=<it>/<experiment>.jsonl)."""
    if step_files(path):
        return True
    children = [c for c in path.iterdir() if not c.name.startswith(".")]
    if any(c.is_dir() and step_files(c) for c in children):
        return True
    return any(c.suffix == ".jsonl" and c.is_file() and is_tracker_line(_first_keys(c)) for c in children)


def _rollout(row: dict[str, Any], uid: str, step: int | None) -> RolloutRecord:
    comps: dict[str, float] = {}
    metrics: dict[str, Any] = {}
    for k, v in row.items():
        if k in _NOT_EXTRA:
            continue
        f = num(v)
        if f is not None and not isinstance(v, str):
            comps[k] = f
        elif v is not None:
            metrics[k] = v
    gts = row.get("gts")
    output = row.get("output")
    r: RolloutRecord = {
        "uid": uid,
        "prompt": row.get("input"),
        "step": step,
        "reward": num(row.get("score")),
        "reward_components": comps,
        "turns": [{"role": "assistant", "content": output if isinstance(output, str) else json.dumps(output)}],
        "final_answer": output if isinstance(output, str) else None,
        "metrics": metrics,
        "advantage": num(row.get("advantage")),  # a custom reward fn may dump it: the framework's own
    }
    turns = split_agent_text(output) if isinstance(output, str) else None
    if turns:  # the tool agent loop: turns inferred from the text, which stays one click away
        r["turns"], r["final_answer"] = turns, final_text(turns)
        metrics["raw_output"], metrics["turns_inferred"] = output, MARKERS
    if gts is not None:
        r["oracle"] = gts if isinstance(gts, str) else json.dumps(gts, ensure_ascii=False)
    return r


def read_step(path: Path, step: int, tag: str, partial_ok: bool) -> tuple[list[RolloutRecord], list[Problem]]:
    """One dump file's rollouts with their groups rebuilt (by `uid` when written, else by prompt)."""
    rows, problems = read_rows(path, partial_ok=partial_ok)
    out: list[RolloutRecord] = []
    uids: list[str | None] = []
    for lineno, row in rows:
        if "input" not in row or "output" not in row:
            problems.append(Problem(str(path), lineno, "not a verl dump line: no `input` / `output`"))
            continue
        line_step = num(row.get("step"))
        rid = row.get("request_id")
        uid = short_hash("verl", tag, step, lineno, rid if rid is not None else "", n=32)
        out.append(_rollout(row, uid, int(line_step) if line_step is not None else step))
        uids.append(str(row["uid"]) if row.get("uid") is not None else None)
    assign_groups(out, lambda i: uids[i])
    return out, problems


def _tracker_points(path: Path, partial_ok: bool) -> Iterator[MetricPoint | Problem]:
    for item in iter_jsonl(path, partial_ok=partial_ok):
        if isinstance(item, Problem):
            yield item
            continue
        lineno, row = item
        step = num(row.get("step")) if isinstance(row, dict) else None
        data = row.get("data") if isinstance(row, dict) else None
        if step is None or not isinstance(data, dict):
            yield Problem(str(path), lineno, 'expected {"step": N, "data": {...}} (verl file tracker)')
            continue
        values = {k: num(v) for k, v in data.items() if v is None or (isinstance(v, int | float))}
        yield {"step": int(step), "values": values}


def _layout(path: Path) -> tuple[Path, list[tuple[str, Path, list[tuple[int, Path]]]], list[Path]]:
    """(root, [(split, dump folder, its step files)], tracker files) of a file or folder."""
    if path.is_file():
        if is_tracker_line(_first_keys(path)):
            return path.parent, [], [path]
        m = STEP_FILE.match(path.name)
        split = "val" if _VAL_DIR.search(path.parent.name) else "train"
        return path.parent, [(split, path.parent, [(int(m.group(1)) if m else 0, path)])], []
    dirs = []
    for folder in _folders(path):
        files = step_files(folder)
        if files:
            dirs.append(("val" if _VAL_DIR.search(folder.name) else "train", folder, files))
    return path, dirs, _trackers(path)


def _folders(root: Path) -> list[Path]:
    """`root` and its subfolders down to MAX_TRACKER_DEPTH (dumps sit in `rollouts/train/` as often
    as in `rollout_data/`), in a stable order."""
    out = [root]
    level = [root]
    for _ in range(MAX_TRACKER_DEPTH):
        level = [c for f in level for c in sorted(f.iterdir()) if c.is_dir() and not c.name.startswith(".")]
        out.extend(level)
    return out


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    root, dirs, trackers = _layout(path)
    yield from _parse(root, dirs, trackers, partial_ok)
    if path.is_dir():
        read = [*trackers, *(f for _, _, files in dirs for _, f in files)]
        yield from unread(root, read, "verl's dumps ({step}.jsonl) or file tracker", partial_ok=partial_ok)


def _parse(root: Path, dirs: list[tuple[str, Path, list[tuple[int, Path]]]], trackers: list[Path],
           partial_ok: bool) -> Iterator[Event]:
    name = trackers[0].stem if len(trackers) == 1 else root.name
    train_ref = "train"
    has_train = bool(trackers) or any(s == "train" for s, _, _ in dirs)
    if has_train:
        run: RunRecord = {"name": name, "kind": "train", "source": "verl", "status": "finished",
                          "external_id": f"{root.name}:train",
                          **file_times([*trackers, *(f for s, _, fs in dirs if s == "train" for _, f in fs)])}  # type: ignore[typeddict-item]
        if len(trackers) == 1:
            run["config"] = {"project": trackers[0].parent.name}
        yield RunEvent(train_ref, run)
    for t in trackers:
        yield from batch_points(train_ref, _tracker_points(t, partial_ok))
    for split, folder, files in dirs:
        for step, f in files:
            rollouts, problems = read_step(f, step, f"{split}:{folder.name}", partial_ok)
            yield from problems
            if not rollouts:
                continue
            if split == "train":
                yield from batch_rollouts(train_ref, rollouts)
                point = None if trackers else step_point(step, rollouts)
                if point:
                    yield MetricsEvent(train_ref, [point])
            else:
                yield from eval_run(f"val/{folder.name}/{step}", {
                    "name": f"{name} · {folder.name} step {step}", "source": "verl",
                    "external_id": f"{root.name}:{folder.name}:{step}"}, step, rollouts,
                    train_ref if has_train else None, f"{root.name}:train")
