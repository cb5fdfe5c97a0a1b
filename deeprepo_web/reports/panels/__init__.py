"""Every panel kind a report can hold, by name (`KINDS`); `panels_data`: a page's panels' live data
(cached under their runs' stamp), or what went wrong, as the page shows it; `panel_compute`: one
panel's data computed now (what a publish freezes)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from django.core.cache import cache

from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.panels import compare, evals, rollouts, training
from deeprepo_web.reports.panels.base import (
    PanelError,
    PanelGone,
    PanelKind,
    id_list,
    project_stamp,
    run_stamps,
)

KINDS: dict[str, PanelKind] = {k.kind: k for mod in (compare, evals, training, rollouts) for k in mod.KINDS}
TEXT = "text"
# A draft's panel is recomputed as soon as its runs' stamp moves (new rollouts, points or marks, an
# edited run); the TTL bounds what the stamp does not see (a renamed label, an edited price).
LIVE_TTL = 300


def panels_data(project: Project, panels: Sequence[tuple[str, dict[str, Any]]], *,
                budget: float | None = None) -> list[dict[str, Any]]:
    """Each (kind, params) panel's live data, in order; {"gone": why} or {"error": why} instead of
    raising, so one panel's trouble never breaks the report.

    The panels are kept in the cache under a stamp of their runs: one query stamps every run the
    page names, one cache read finds the panels whose runs did not move, and only the others are
    computed. New data shows at once; reopening a draft whose runs did not move computes nothing.
    With a `budget` (seconds), panels still to compute once it is spent are {"pending": True}: the
    page loads them on its own (a compare table's bootstraps over big runs take seconds).
    """
    start = time.monotonic()
    runs = run_stamps(project, [i for _, params in panels for i in _run_ids(params)])
    whole: list[Any] | None = None
    keys = []
    for kind, params in panels:
        ids = sorted(set(_run_ids(params)))
        if ids:
            stamp: Any = [[i, runs.get(i)] for i in ids]
        else:
            whole = project_stamp() if whole is None else whole
            stamp = whole
        raw = json.dumps([project.pk, kind, params, stamp], sort_keys=True, default=str)
        keys.append("report-panel:" + hashlib.sha256(raw.encode()).hexdigest())
    found = cache.get_many(keys)
    out, fresh = [], {}
    for (kind, params), key in zip(panels, keys, strict=True):
        data = found.get(key)
        if data is None and budget is not None and time.monotonic() - start >= budget:
            data = {"pending": True}
        elif data is None:
            data = fresh[key] = panel_compute(project, kind, params)
        out.append(dict(data))
    if fresh:
        cache.set_many(fresh, LIVE_TTL)
    return out


def panel_compute(project: Project, kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """The panel's data computed now (what a publish freezes); errors as data, like panels_data."""
    panel = KINDS.get(kind)
    if panel is None:
        return {"error": f"unknown panel kind {kind[:40]!r}"}
    try:
        return panel.compute(project, params)
    except PanelGone as exc:
        return {"gone": str(exc)}
    except PanelError as exc:
        return {"error": str(exc)}


def _run_ids(params: dict[str, Any]) -> list[str]:
    return id_list(params.get("runs")) + id_list(params.get("run"))


__all__ = ["KINDS", "TEXT", "PanelError", "PanelGone", "panel_compute", "panels_data"]
