"""W&B tables (`*.table.json`: {"columns", "data"}) as rollouts when their columns say so.

A table is taken as rollouts when it has a completion-like column (completion, response, output,
text, …) and a prompt-like or a reward-like one; OpenRLHF's `train/generated_samples`
(`global_step`, `text`, `reward`) is one; verl's validation table (`step, input_1, output_1, score_1,
input_2, …`, a row a step) is read as a row a sample. Image cells become inline images (the server moves them
to the blob store).
"""

from __future__ import annotations

import base64
import mimetypes
import re
from pathlib import Path
from typing import Any

from ..records import Problem, RolloutRecord, TurnRecord
from ._json import load_json
from ._values import num, short_hash

PROMPT = ("prompt", "prompts", "input", "inputs", "question", "query", "problem", "instruction")
COMPLETION = ("completion", "completions", "response", "responses", "output", "outputs", "generation",
              "answer_text", "text", "generated_text", "sample")
REWARD = ("reward", "rewards", "score", "scores")
STEP = ("step", "global_step", "_step", "train_step")
ANSWER = ("answer", "ground_truth", "gts", "solution", "target", "label")
MAX_IMAGE = 8 << 20


def _column(columns: list[str], names: tuple[str, ...]) -> int | None:
    lowered = [str(c).lower().rsplit("/", 1)[-1] for c in columns]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return None


def rollout_columns(columns: list[Any]) -> dict[str, int] | None:
    """Which column is which, or None when the table does not look like rollouts (a verl validation
    table answers for the rows it is read as)."""
    wide = _unwide(columns, [])
    cols = [str(c) for c in (wide[0] if wide else columns)]
    found = {role: _column(cols, names) for role, names in
             (("prompt", PROMPT), ("completion", COMPLETION), ("reward", REWARD), ("step", STEP),
              ("answer", ANSWER))}
    if found["completion"] is None or (found["prompt"] is None and found["reward"] is None):
        return None
    if found["prompt"] == found["completion"]:
        found["prompt"] = None
    return {k: v for k, v in found.items() if v is not None}


def _cell_text(cell: Any, run_dir: Path) -> str | None:
    if cell is None:
        return None
    if isinstance(cell, dict) and cell.get("_type") == "image-file" and isinstance(cell.get("path"), str):
        image = (run_dir / "files" / cell["path"]).resolve()
        if run_dir.resolve() in image.parents and image.is_file() and image.stat().st_size <= MAX_IMAGE:
            kind = mimetypes.guess_type(image.name)[0] or "image/png"
            return f"![image](data:{kind};base64,{base64.b64encode(image.read_bytes()).decode()})"
        return f"[image {cell['path']} not in the run folder]"
    return cell if isinstance(cell, str) else str(cell)


def table_rollouts(path: Path, run_dir: Path, key: str, step: int, run_id: str) -> list[RolloutRecord | Problem]:
    """The rows of one table file as rollouts (empty when the columns do not look like rollouts)."""
    doc, problem = load_json(path)
    if problem is not None:
        return [problem]
    columns, data = (doc.get("columns"), doc.get("data")) if isinstance(doc, dict) else (None, None)
    if not isinstance(columns, list) or not isinstance(data, list):
        return [Problem(str(path), None, "a W&B table needs a 'columns' list and a 'data' list")]
    return rows_rollouts(columns, data, str(path), key, step, run_id, run_dir)


_WIDE = re.compile(r"^(input|output|score)_(\d+)$")


def _unwide(columns: list[Any], data: list[Any]) -> tuple[list[Any], list[Any]] | None:
    """verl's validation table: one row a step, `step, input_1, output_1, score_1, input_2, …`
    (verl/utils/tracking.py ValidationGenerationsLogger) → one row a sample: step, input, output, score."""
    slots: dict[int, dict[str, int]] = {}
    for i, c in enumerate(columns):
        m = _WIDE.match(str(c))
        if m:
            slots.setdefault(int(m.group(2)), {})[m.group(1)] = i
    if not slots or any(len(s) != 3 for s in slots.values()):
        return None
    step = _column([str(c) for c in columns], STEP)
    rows = [[row[step] if step is not None else None, *(row[s[k]] for k in ("input", "output", "score"))]
            for row in data if isinstance(row, list) and len(row) == len(columns) for _, s in sorted(slots.items())]
    return ["step", "input", "output", "score"], rows


def rows_rollouts(columns: list[Any], data: list[Any], where: str, key: str, step: int, run_id: str,
                  run_dir: Path) -> list[RolloutRecord | Problem]:
    """Rows of a table (W&B's, MLflow's or Trackio's) as rollouts, when its columns look like rollouts."""
    wide = _unwide(columns, data)
    if wide is not None:
        columns, data = wide
    roles = rollout_columns(columns)
    if roles is None:
        return []
    out: list[RolloutRecord | Problem] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(data):
        if not isinstance(row, list) or len(row) != len(columns):
            out.append(Problem(where, None, f"row {i}: {len(row) if isinstance(row, list) else 'not a list'} "
                                            f"cells for {len(columns)} columns"))
            continue

        def cell(role: str, row: list[Any] = row) -> Any:
            return row[roles[role]] if role in roles else None

        prompt = _cell_text(cell("prompt"), run_dir)
        completion = _cell_text(cell("completion"), run_dir)
        row_step = num(cell("step"))
        example = prompt if prompt is not None else f"{key}:{i}"
        sample = seen.get(example, 0)
        seen[example] = sample + 1
        turns: list[TurnRecord] = []
        if prompt is not None:
            turns.append({"role": "user", "content": prompt})
        turns.append({"role": "assistant", "content": completion})
        extra = {str(c): v for c, v in zip(columns, row, strict=True)
                 if columns.index(c) not in roles.values() and isinstance(v, int | float | str | bool)}
        record: RolloutRecord = {
            "uid": f"table-{short_hash(run_id, key, where.rsplit('/', 1)[-1], step, i, n=32)}",
            "example_key": example if len(example) <= 200 else "prompt:" + short_hash(example, n=32),
            "prompt": prompt, "step": int(row_step) if row_step is not None else step, "sample_index": sample,
            "reward": num(cell("reward")), "final_answer": completion, "turns": turns,
            "metrics": {"table": key, **{k: v for k, v in extra.items() if not isinstance(v, str) or len(v) <= 500}},
        }
        if cell("answer") is not None:
            record["oracle"] = str(cell("answer"))
        out.append(record)
    return out
