"""Reads for report pages: the project's reports, a report's blocks with their data (live for the
draft, stored for a published version), and its versions. Bounded by MAX_BLOCKS / page sizes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils.safestring import SafeString

from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.models import Block, Report, ReportVersion
from deeprepo_web.reports.panels import KINDS, TEXT, panels_data
from deeprepo_web.reports.panels.base import PanelKind
from deeprepo_web.reports.reading import reader_html
from deeprepo_web.reports.services import MAX_BLOCKS
from deeprepo_web.trajectories.richtext import markdown_html

VERSIONS_SHOWN = 200


@dataclass
class Item:
    """One block as a page shows it."""

    uid: str
    kind: str
    text: str
    params: dict[str, Any]
    data: dict[str, Any] | None  # None for text
    version: int = 0
    updated_by: str = ""
    updated_at: datetime | None = None
    reader_host: str | None = None  # set on a shared page: links into the project become text

    @property
    def panel(self) -> PanelKind | None:
        return KINDS.get(self.kind)

    @property
    def html(self) -> SafeString:
        out = markdown_html(self.text)
        return out if self.reader_host is None else reader_html(out, host=self.reader_host)

    @property
    def template(self) -> str:
        return f"reports/panels/{self.kind}.html"


def reports_for_project(*, project: Project) -> QuerySet[Report]:
    return (Report.objects.filter(project=project).select_related("updated_by", "published")
            .order_by("-updated_at")[:500])


def draft_items(*, report: Report, budget: float | None = None) -> list[Item]:
    """The draft's blocks with live data; with a `budget` (seconds), panels not computed within it
    are {"pending": True} (the page loads them on its own, `draft_item`)."""
    blocks = list(Block.objects.filter(report=report).select_related("updated_by").order_by("position")[:MAX_BLOCKS])
    live = iter(panels_data(report.project, [(b.kind, b.params) for b in blocks if b.kind != TEXT], budget=budget))
    return [Item(b.uid, b.kind, b.text, b.params, None if b.kind == TEXT else next(live),
                 b.version, b.updated_by.username if b.updated_by else "", b.updated_at) for b in blocks]


def draft_item(*, report: Report, uid: str) -> Item | None:
    """One block of the draft with its live data (a pending panel's own request)."""
    b = Block.objects.filter(report=report, uid=uid).select_related("updated_by").first()
    if b is None:
        return None
    data = None if b.kind == TEXT else panels_data(report.project, [(b.kind, b.params)])[0]
    return Item(b.uid, b.kind, b.text, b.params, data, b.version, b.updated_by.username if b.updated_by else "",
                b.updated_at)


def version_items(*, version: ReportVersion, project: Project, reader_host: str | None = None) -> list[Item]:
    """A version's blocks: a published one with its stored data (never recomputed), others live.
    `reader_host` (the request's host) for a share link's reader, who cannot open project pages."""
    blocks = version.blocks[:MAX_BLOCKS]
    panels = [s for s in blocks if s["kind"] != TEXT]
    if version.frozen is not None:
        data = [version.frozen.get(s["uid"]) or {"error": "no data was stored for this panel"} for s in panels]
    else:
        data = panels_data(project, [(s["kind"], s["params"]) for s in panels])
    live = iter(data)
    return [Item(s["uid"], s["kind"], s["text"], s["params"], None if s["kind"] == TEXT else next(live),
                 reader_host=reader_host) for s in blocks]


def versions_page(*, report: Report) -> QuerySet[ReportVersion]:
    return report.versions.select_related("created_by").defer("blocks", "frozen").order_by("-number")[:VERSIONS_SHOWN]


def project_runs_hint(*, project: Project) -> list[tuple[str, str]]:
    """Recent runs (id, name) for the panel forms' suggestions."""
    from deeprepo_web.runs.models import Run

    return list(Run.objects.filter(project=project).order_by("-created_at").values_list("public_id", "name")[:200])
