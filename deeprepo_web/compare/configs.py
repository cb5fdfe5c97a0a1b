"""The runs' config and summary side by side: one row per dotted key, marked when the runs differ.

What a researcher looks for first when two curves part (the lr that differs) is a row here; the
page hides the equal rows unless asked ("differences only" is the default).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deeprepo_web.runs.models import Run

MAX_ROWS = 600
MAX_DEPTH = 6
MAX_VALUE = 200


@dataclass
class ConfigRow:
    key: str
    values: list[str]  # one per run, "—" where the run does not have the key
    differs: bool


def flatten(value: Any, prefix: str = "", depth: int = 1, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Dotted paths of a nested dict's leaves (lists and too-deep values kept whole)."""
    out = {} if out is None else out
    if isinstance(value, dict) and depth <= MAX_DEPTH:
        for key, child in value.items():
            flatten(child, f"{prefix}{key}." if isinstance(child, dict) else f"{prefix}{key}", depth + 1, out)
    elif prefix:
        out[prefix.rstrip(".")] = value
    return out


def shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


_MISSING = object()


def config_rows(runs: Sequence[Run]) -> list[ConfigRow]:
    """Config keys, then summary keys (`summary.` prefix), then the run fields a config often holds."""
    flats = []
    for run in runs:
        flat = flatten(run.config or {})
        flat.update({f"summary.{k}": v for k, v in flatten(run.summary or {}).items()})
        flat.update({f"run.{f}": getattr(run, f) for f in ("model", "environment", "method", "adapter")
                     if getattr(run, f)})
        flats.append(flat)
    keys = sorted({k for flat in flats for k in flat},
                  key=lambda k: (k.startswith("run."), k.startswith("summary."), k))[:MAX_ROWS]
    rows = []
    for key in keys:
        raw = [flat.get(key, _MISSING) for flat in flats]
        texts = ["—" if v is _MISSING else shown(v) for v in raw]
        rows.append(ConfigRow(key=key, values=texts, differs=len(set(texts)) > 1))
    return rows
