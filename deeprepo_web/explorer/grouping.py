"""Group-by for the runs table: which config keys exist, and which of them a typed name means.

A researcher types `lr`; the runs keep it at `lr`, `optimizer.lr` or a launched job's `params.lr`.
Every existing dotted key that ends with what was typed is used, the shallowest first.
"""

from __future__ import annotations

import re
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.models import Run

RUNS_SAMPLED = 200  # the latest runs' configs stand for the project's keys
MAX_KEYS = 400
MAX_DEPTH = 4
MAX_MATCHES = 6
# Segments KT() can address: no "__" (its path separator), nothing exotic.
_SEGMENT = re.compile(r"^(?!.*__)[A-Za-z0-9_\-]{1,80}$")


def _leaves(value: Any, prefix: str, depth: int, out: set[str]) -> None:
    if not isinstance(value, dict) or depth > MAX_DEPTH:
        return
    for key, child in value.items():
        if not _SEGMENT.match(str(key)):
            continue
        path = f"{prefix}{key}"
        if isinstance(child, dict):
            _leaves(child, path + ".", depth + 1, out)
        elif not isinstance(child, list):
            out.add(path)


def config_keys(*, project: Project) -> list[str]:
    """Dotted paths of the scalar config values of the project's latest runs, sorted."""
    found: set[str] = set()
    for config in Run.objects.filter(project=project).order_by("-created_at").values_list(
            "config", flat=True)[:RUNS_SAMPLED]:
        _leaves(config, "", 1, found)
        if len(found) >= MAX_KEYS:
            break
    return sorted(found)[:MAX_KEYS]


def group_paths(group: str, keys: list[str]) -> list[str]:
    """The existing keys `group` names: a dotted path itself (with or without `config.`); a bare name,
    every key that is it or ends in it (`lr` -> `lr`, `params.lr`)."""
    wanted = group.strip().removeprefix("config.").strip(".")
    if not wanted or not all(_SEGMENT.match(s) for s in wanted.split(".")):
        return []
    if "." in wanted and wanted in keys:
        return [wanted]  # a full path names one key
    named = [k for k in keys if k == wanted or k.endswith("." + wanted)]
    return sorted(named, key=lambda k: (k.count("."), k))[:MAX_MATCHES]
