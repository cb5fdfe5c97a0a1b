"""Helpers for the server importer tests: import into the `team` project and count what was stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.importers.pipeline import import_path
from deeprepo_web.importers.report import ImportReport
from deeprepo_web.runs.models import Metric, MetricSeries, Rollout, Run, ToolCall, Turn


def vf_row(i: int, key: int, **extra: Any) -> dict[str, Any]:
    """One verifiers results.jsonl row with a tool call and its output."""
    call = {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": f"x{i}"})}}
    return {
        "example_id": key,
        "prompt": [{"role": "user", "content": f"question {key}"}],
        "completion": [
            {"role": "assistant", "content": f"looking {i}", "tool_calls": [json.dumps(call)]},
            {"role": "tool", "content": f"result {i}"},
            {"role": "assistant", "content": f"answer {i}"},
        ],
        "reward": i / 10, "metrics": {"acc_reward": 1.0, "num_turns": 2.0},
        "is_truncated": False, "stop_condition": "no_tools", "error": None, "answer": "42",
        **extra,
    }


def write_vf(folder: Path, rows: list[dict[str, Any]] | list[str], env: str = "toy") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metadata.json").write_text(json.dumps({"env_id": env, "model": "m", "num_examples": 3,
                                                      "rollouts_per_example": 2}))
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def counts(run: Run | None = None, **filters: Any) -> dict[str, int]:
    q = {"run": run} if run is not None else {}
    return {
        "runs": Run.objects.filter(**filters).count() if run is None else 1,
        "rollouts": Rollout.objects.filter(**q).count(),
        "turns": Turn.objects.filter(**({"rollout__run": run} if run else {})).count(),
        "tool_calls": ToolCall.objects.filter(**({"rollout__run": run} if run else {})).count(),
        "points": Metric.objects.filter(**({"series__run": run} if run else {})).count(),
        "series": MetricSeries.objects.filter(**q).count(),
    }


@pytest.fixture
def do_import(team):
    def run(path: Path | str, **kw: Any) -> ImportReport:
        return import_path(project=team.project, path=path, **kw)

    return run
