"""Unified diffs parsed for display: a model's patch beside the oracle patch, in unified or split
(old | new) form. Only structure is computed here; templates escape every line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from deeprepo_web.runs.models import Rollout

MAX_PATCH_LINES = 5000
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def looks_like_patch(text: str) -> bool:
    head = text[:20000]
    return ("diff --git " in head) or ("\n+++ " in head and "\n@@ " in head) or head.startswith("--- ")


@dataclass
class Line:
    kind: str  # "add" | "del" | "ctx" | "hunk" | "file" | "meta"
    text: str
    old: int | None = None
    new: int | None = None


@dataclass
class SplitRow:
    kind: str  # "hunk" | "file" | "pair"
    left: Line | None = None
    right: Line | None = None
    text: str = ""


@dataclass
class FilePatch:
    path: str
    lines: list[Line] = field(default_factory=list)
    added: int = 0
    removed: int = 0


def parse_patch(text: str) -> tuple[list[FilePatch], bool]:
    """Files of a unified diff with numbered lines; truncated at MAX_PATCH_LINES (the bool)."""
    files: list[FilePatch] = []
    current: FilePatch | None = None
    old = new = 0
    raw = text.splitlines()
    truncated = len(raw) > MAX_PATCH_LINES
    for line in raw[:MAX_PATCH_LINES]:
        if line.startswith("diff --git ") or (line.startswith("--- ") and (current is None or current.lines
                                                                           and current.lines[-1].kind != "meta")):
            if line.startswith("diff --git "):
                parts = line.split(" b/", 1)
                path = parts[1] if len(parts) == 2 else line[11:]
            else:
                path = line[4:].removeprefix("a/")
            current = FilePatch(path=path)
            files.append(current)
            current.lines.append(Line("meta", line))
            continue
        if current is None:
            current = FilePatch(path="(patch)")
            files.append(current)
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
            if path != "/dev/null":
                current.path = path
            current.lines.append(Line("meta", line))
            continue
        m = _HUNK.match(line)
        if m:
            old, new = int(m.group(1)), int(m.group(2))
            current.lines.append(Line("hunk", line))
        elif line.startswith("+"):
            current.lines.append(Line("add", line[1:], None, new))
            current.added += 1
            new += 1
        elif line.startswith("-") and not line.startswith("--- "):
            current.lines.append(Line("del", line[1:], old, None))
            current.removed += 1
            old += 1
        elif line.startswith(" ") or line == "":
            current.lines.append(Line("ctx", line[1:], old, new))
            old += 1
            new += 1
        else:
            current.lines.append(Line("meta", line))
    return files, truncated


def split_rows(fp: FilePatch) -> list[SplitRow]:
    """Old | new rows: runs of deletions and additions are paired line by line."""
    rows: list[SplitRow] = []
    dels: list[Line] = []
    adds: list[Line] = []

    def flush() -> None:
        for i in range(max(len(dels), len(adds))):
            rows.append(SplitRow("pair", dels[i] if i < len(dels) else None, adds[i] if i < len(adds) else None))
        dels.clear()
        adds.clear()

    for line in fp.lines:
        if line.kind == "del":
            if adds:
                flush()
            dels.append(line)
        elif line.kind == "add":
            adds.append(line)
        else:
            flush()
            if line.kind == "hunk":
                rows.append(SplitRow("hunk", text=line.text))
            elif line.kind == "ctx":
                rows.append(SplitRow("pair", line, line))
    flush()
    return rows


def _changed_paths(files: list[FilePatch]) -> set[str]:
    return {f.path for f in files}


def patch_context(rollout: Rollout, *, mode: str) -> dict[str, Any]:
    answer = rollout.final_answer or ""
    oracle = rollout.example.oracle or ""
    model_files, model_trunc = parse_patch(answer) if answer else ([], False)
    oracle_files, oracle_trunc = parse_patch(oracle) if oracle else ([], False)
    mp, op = _changed_paths(model_files), _changed_paths(oracle_files)
    tests: dict[str, Any] = {}
    status = rollout.metrics.get("tests_status") if isinstance(rollout.metrics, dict) else None
    if isinstance(status, dict):
        for name, block in status.items():
            if isinstance(block, dict):
                ok = [str(t)[:300] for t in (block.get("success") or [])][:200]
                bad = [str(t)[:300] for t in (block.get("failure") or [])][:200]
                if ok or bad:
                    tests[str(name)[:50]] = {"success": ok, "failure": bad}
    scalar_metrics = {
        str(k)[:80]: v for k, v in (rollout.metrics or {}).items()
        if k not in ("behaviour", "tests_status") and isinstance(v, int | float | bool | str) and len(str(v)) < 200
    }
    def with_split(files: list[FilePatch]) -> list[dict[str, Any]]:
        return [{"f": f, "split": split_rows(f) if mode == "split" else None} for f in files]

    return {
        "rollout": rollout, "mode": mode,
        "is_patch": looks_like_patch(answer), "has_oracle": bool(oracle),
        "model_files": with_split(model_files), "oracle_files": with_split(oracle_files),
        "model_truncated": model_trunc, "oracle_truncated": oracle_trunc,
        "same_files": sorted(mp & op), "only_model": sorted(mp - op), "only_oracle": sorted(op - mp),
        "tests": tests, "scalar_metrics": scalar_metrics,
        "components": {str(k)[:80]: v for k, v in (rollout.reward_components or {}).items()},
    }
