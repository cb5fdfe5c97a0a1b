"""SkyRL eval dumps: `{export_path}/dumped_evals/global_step_{N}_evals/{data_source}.jsonl` plus
`aggregated_results.jsonl` (one line of eval metrics).

The step is only in the folder name. Each step's samples become an eval run linked, at that step,
to a train run that holds the aggregated eval metrics as curves (SkyRL logs its training metrics to
a tracker, not here). SkyRL's eval-only entry point dumps into `dumped_evals/eval_only/`: an eval
run of its own, no training step, its aggregate as its summary. Anything else in the folder is
reported. Training batches (`trainer.dump_data_batch`) are pickles: named, never loaded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RolloutRecord, RunEvent
from ._batches import batch_points, numeric_values
from ._groups import assign_groups, eval_run
from ._stepfiles import file_times, read_rows
from ._unread import unread
from ._values import short_hash

STEP_DIR = re.compile(r"^global_step_(\d+)_evals$")
EVAL_ONLY = "eval_only"
SAMPLE_KEYS = frozenset({"input_prompt", "output_response"})
AGGREGATED = "aggregated_results.jsonl"


def is_sample_line(keys: set[str]) -> bool:
    return SAMPLE_KEYS <= keys


def _evals_root(path: Path) -> Path | None:
    """The `dumped_evals` folder of an export path, the folder itself, or the parent of one step's folder."""
    for cand in (path / "dumped_evals", path):
        if cand.is_dir() and any(_is_part(c) for c in cand.iterdir()):
            return cand
    if STEP_DIR.match(path.name) or path.name == EVAL_ONLY and path.parent.name == "dumped_evals":
        return path.parent
    return None


def _is_part(d: Path) -> bool:
    return d.is_dir() and (STEP_DIR.match(d.name) is not None or d.name == EVAL_ONLY)


def looks_like_export(path: Path) -> bool:
    return _evals_root(path) is not None


def _rollout(row: dict[str, Any], uid: str, step: int) -> RolloutRecord:
    raw_extras = row.get("env_extras")
    extras: dict[str, Any] = raw_extras if isinstance(raw_extras, dict) else {}
    raw_spec = extras.get("reward_spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    out = row.get("output_response")
    r: RolloutRecord = {
        "uid": uid,
        "prompt": row.get("input_prompt"),
        "step": step,
        "reward": row.get("score") if isinstance(row.get("score"), int | float) else None,
        "turns": [{"role": "assistant", "content": out if isinstance(out, str) else str(out)}],
        "final_answer": out if isinstance(out, str) else None,
        "stop_condition": row.get("stop_reason"),
        "is_truncated": row.get("stop_reason") == "length",
        "example_info": {k: row[k] for k in ("data_source", "env_class", "env_extras") if row.get(k) is not None},
        "metrics": {k: v for k, v in row.items() if k not in SAMPLE_KEYS | {"score", "stop_reason", "env_class",
                                                                            "env_extras", "data_source"}},
    }
    if spec.get("ground_truth") is not None:
        r["oracle"] = str(spec["ground_truth"])
    score = row.get("score")
    if isinstance(score, list):  # per-token rewards: their sum is the trajectory's
        r["reward"] = float(sum(x for x in score if isinstance(x, int | float)))
    return r


def _aggregated(path: Path, step: int, partial_ok: bool) -> tuple[MetricPoint | None, list[Problem]]:
    rows, problems = read_rows(path, partial_ok=partial_ok)
    if not rows:
        return None, problems
    return {"step": step, "values": numeric_values(rows[-1][1])}, problems


def _pickles(root: Path) -> Iterator[Problem]:
    for f in sorted(root.rglob("*.pkl"))[:50]:
        yield Problem(str(f), None, "not read: a pickle (trainer.dump_data_batch); deeprepo never unpickles files")


def _read_part(d: Path, name: str, step: int, partial_ok: bool,
               read: list[Path]) -> tuple[list[RolloutRecord], MetricPoint | None, list[Problem]]:
    """One dumped folder's samples (every data source file) and its aggregated_results line."""
    rollouts: list[RolloutRecord] = []
    point: MetricPoint | None = None
    problems: list[Problem] = []
    for f in sorted(d.glob("*.jsonl")):
        read.append(f)
        if f.name == AGGREGATED:
            point, probs = _aggregated(f, step, partial_ok)
            problems.extend(probs)
            continue
        rows, probs = read_rows(f, partial_ok=partial_ok)
        problems.extend(probs)
        for lineno, row in rows:
            if not is_sample_line(set(row)):
                problems.append(Problem(str(f), lineno, "not a SkyRL eval sample: no input_prompt / output_response"))
                continue
            rollouts.append(_rollout(row, short_hash("skyrl", name, step if d.name != EVAL_ONLY else d.name,
                                                     f.name, lineno, n=32), step))
    assign_groups(rollouts, lambda i: None)  # SkyRL writes no group id: n_samples_per_prompt share a prompt
    return rollouts, point, problems


def _eval_only(d: Path, name: str, partial_ok: bool, read: list[Path]) -> Iterator[Event]:
    """`dumped_evals/eval_only/`: an evaluation outside training, so no checkpoint step and no parent."""
    rollouts, point, problems = _read_part(d, name, 0, partial_ok, read)
    yield from problems
    if not rollouts and point is None:
        return
    events = list(eval_run("eval/only", {"name": f"{name} · eval only", "source": "skyrl",
                                         "external_id": f"{name}:eval:only", **file_times(list(d.glob("*.jsonl")))},  # type: ignore[typeddict-item]
                           0, rollouts, None))
    run = events[0]
    assert isinstance(run, RunEvent)
    run.run.pop("checkpoint_step", None)
    if point:
        run.run["summary"] = {**run.run.get("summary", {}), **point["values"]}
    yield from events


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    evals = _evals_root(path.parent if path.is_file() else path)
    if evals is None:
        yield Problem(str(path), None, "no dumped_evals/global_step_N_evals or eval_only folder", fatal=True)
        return
    export = evals.parent if evals.name == "dumped_evals" else evals
    name = export.name
    steps = sorted((int(m.group(1)), d) for d in evals.iterdir() if d.is_dir() and (m := STEP_DIR.match(d.name)))
    read: list[Path] = []
    if steps:
        yield RunEvent("train", {"name": name, "kind": "train", "source": "skyrl", "status": "finished",
                                 "external_id": f"{name}:train",
                                 **file_times([f for _, d in steps for f in d.glob("*.jsonl")])})  # type: ignore[typeddict-item]
    points: list[MetricPoint | Problem] = []
    for step, d in steps:
        rollouts, point, problems = _read_part(d, name, step, partial_ok, read)
        yield from problems
        if point:
            points.append(point)
        if rollouts:
            yield from eval_run(f"eval/{step}", {"name": f"{name} · eval step {step}", "source": "skyrl",
                                                 "external_id": f"{name}:eval:{step}"}, step, rollouts, "train", f"{name}:train")
    if steps:
        yield from batch_points("train", points)
    if (evals / EVAL_ONLY).is_dir():
        yield from _eval_only(evals / EVAL_ONLY, name, partial_ok, read)
    yield from _pickles(export)
    yield from unread(evals, read, "a SkyRL dump (global_step_N_evals/, eval_only/)", partial_ok=partial_ok)
