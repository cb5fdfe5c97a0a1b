"""Every panel kind a report can hold, by name (`KINDS`), and `panel_data`: a panel's data, or what
went wrong, as the page shows it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.core.cache import cache

from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.panels import compare, evals, rollouts, training
from deeprepo_web.reports.panels.base import PanelError, PanelGone, PanelKind, data_stamp, id_list

KINDS: dict[str, PanelKind] = {k.kind: k for mod in (compare, evals, training, rollouts) for k in mod.KINDS}
TEXT = "text"
LIVE_TTL = 60


def panel_data(project: Project, kind: str, params: dict[str, Any], *, fresh: bool = False) -> dict[str, Any]:
    """The panel's live data; {"gone": why} or {"error": why} instead of raising, so one panel's
    trouble never breaks the report.

    A draft's panels are kept in the cache under a stamp of their runs (newest rollout, metric
    points, marks) for at most LIVE_TTL seconds: new data shows at once, and reopening a draft
    whose runs did not move recomputes nothing. Publishing asks for `fresh` data.
    """
    panel = KINDS.get(kind)
    if panel is None:
        return {"error": f"unknown panel kind {kind[:40]!r}"}
    key = None if fresh else _cache_key(project, kind, params)
    if key is not None:
        hit = cache.get(key)
        if hit is not None:
            return dict(hit)
    try:
        data = panel.compute(project, params)
    except PanelGone as exc:
        data = {"gone": str(exc)}
    except PanelError as exc:
        data = {"error": str(exc)}
    cache.set(key or _cache_key(project, kind, params), data, LIVE_TTL)
    return data


def _cache_key(project: Project, kind: str, params: dict[str, Any]) -> str:
    stamp = data_stamp(project, id_list(params.get("runs")) + id_list(params.get("run")))
    raw = json.dumps([project.pk, kind, params, stamp], sort_keys=True, default=str)
    return "report-panel:" + hashlib.sha256(raw.encode()).hexdigest()


__all__ = ["KINDS", "TEXT", "PanelError", "PanelGone", "panel_data"]
