"""Every panel kind a report can hold, by name (`KINDS`), and `panel_data`: a panel's data, or what
went wrong, as the page shows it."""

from __future__ import annotations

from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.panels import compare, evals, rollouts, training
from deeprepo_web.reports.panels.base import PanelError, PanelGone, PanelKind

KINDS: dict[str, PanelKind] = {k.kind: k for mod in (compare, evals, training, rollouts) for k in mod.KINDS}
TEXT = "text"


def panel_data(project: Project, kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """The panel's live data; {"gone": why} or {"error": why} instead of raising, so one panel's
    trouble never breaks the report."""
    panel = KINDS.get(kind)
    if panel is None:
        return {"error": f"unknown panel kind {kind[:40]!r}"}
    try:
        return panel.compute(project, params)
    except PanelGone as exc:
        return {"gone": str(exc)}
    except PanelError as exc:
        return {"error": str(exc)}


__all__ = ["KINDS", "TEXT", "PanelError", "PanelGone", "panel_data"]
