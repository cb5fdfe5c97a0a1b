"""Writes to reports. Every write locks the report's row, changes blocks, and records a version.

Concurrency: the row lock serializes saves of one report, so two editors saving different blocks
both land (each save touches only its own block row) and every version snapshot holds both. Two
saving the same block: each save carries the block version it was editing; the update is
conditional on it (optimistic locking), and the later save gets BlockConflict with the other
editor's block instead of overwriting it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.models import Block, Report, ReportVersion
from deeprepo_web.reports.panels import KINDS, TEXT, PanelError, panel_compute
from deeprepo_web.text import clean_deep, clean_text

MAX_BLOCKS = 100
MAX_TEXT = 100_000
# Autosaves of one text block by one editor within this window update that version in place,
# so typing a paragraph is one version, not forty.
COALESCE = timedelta(seconds=60)


class ReportError(ValueError):
    """Bad input for a report; the message names the field."""


class BlockConflict(Exception):
    def __init__(self, block: Block | None) -> None:
        super().__init__("someone else saved this block meanwhile" if block else "this block was removed")
        self.block = block


def _locked(report: Report) -> Report:
    return Report.objects.select_for_update().get(pk=report.pk)


def _snapshot(report: Report, user: Any, note: str, *, coalesce_uid: str = "") -> ReportVersion:
    blocks = [b.snapshot() for b in report.blocks.order_by("position")]
    last = report.versions.order_by("-number").first()
    now = timezone.now()
    if (coalesce_uid and last is not None and last.frozen is None and last.created_by_id == getattr(user, "pk", None)
            and last.note == f"edited text {coalesce_uid}" and now - last.created_at < COALESCE):
        ReportVersion.objects.filter(pk=last.pk).update(blocks=blocks, title=report.title, created_at=now)
        version = last
    else:
        number = (last.number if last else 0) + 1
        version = ReportVersion.objects.create(report=report, number=number, title=report.title, blocks=blocks,
                                               note=note[:200], created_by=user, created_at=now)
    Report.objects.filter(pk=report.pk).update(updated_by=user, updated_at=now)
    return version


def _clean_params(project: Project, kind: str, params: dict[str, Any]) -> dict[str, Any]:
    if kind == TEXT:
        return {}
    panel = KINDS.get(kind)
    if panel is None:
        raise ReportError(f"kind: no panel kind {kind[:40]!r}")
    return panel.clean(project, clean_deep(params or {}))


def _clean_title(title: str) -> str:
    title = " ".join(clean_text(title or "").split())[:300]
    if not title:
        raise ReportError("title: give the report a title")
    return title


def report_create(*, project: Project, user: Any, title: str, blocks: list[dict[str, Any]] | None = None) -> Report:
    """A draft with `blocks` ([{kind, text, params}]); panel params are checked against `project`."""
    specs = [(b["kind"], clean_text(b.get("text") or "")[:MAX_TEXT], _clean_params(project, b["kind"], b.get("params") or {}))
             for b in (blocks or [])[:MAX_BLOCKS]]
    with transaction.atomic():
        report = Report.objects.create(project=project, title=_clean_title(title), created_by=user, updated_by=user)
        Block.objects.bulk_create([Block(report=report, kind=k, text=t, params=p, position=i, updated_by=user)
                                   for i, (k, t, p) in enumerate(specs)])
        _snapshot(report, user, "created")
    return report


def block_add(*, report: Report, user: Any, kind: str, text: str = "", params: dict[str, Any] | None = None,
              after: str = "") -> Block:
    clean = _clean_params(report.project, kind, params or {})
    with transaction.atomic():
        report = _locked(report)
        if report.blocks.count() >= MAX_BLOCKS:
            raise ReportError(f"blocks: a report holds at most {MAX_BLOCKS} blocks")
        anchor = report.blocks.filter(uid=after).first() if after else None
        if anchor is None:
            position = (report.blocks.aggregate(m=Max("position"))["m"] or -1) + 1
        else:
            position = anchor.position + 1
            report.blocks.filter(position__gte=position).update(position=F("position") + 1)
        block = Block.objects.create(report=report, kind=kind, text=clean_text(text)[:MAX_TEXT], params=clean,
                                     position=position, updated_by=user)
        _snapshot(report, user, f"added {KINDS[kind].label if kind in KINDS else 'text'}")
    return block


def block_update(*, report: Report, user: Any, uid: str, version: int, text: str | None = None,
                 params: dict[str, Any] | None = None) -> Block:
    """Saves a block if nobody saved it since `version`; BlockConflict (with theirs) otherwise."""
    with transaction.atomic():
        report = _locked(report)
        block = report.blocks.filter(uid=uid).first()
        if block is None:
            raise BlockConflict(None)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = clean_text(text)[:MAX_TEXT]
        if params is not None:
            changes["params"] = _clean_params(report.project, block.kind, params)
        done = Block.objects.filter(pk=block.pk, version=version).update(
            **changes, version=F("version") + 1, updated_by=user, updated_at=timezone.now())
        block.refresh_from_db()
        if not done:
            raise BlockConflict(block)
        is_text = block.kind == TEXT and params is None
        _snapshot(report, user, f"edited text {uid}" if is_text else "edited panel",
                  coalesce_uid=uid if is_text else "")
    return block


def block_move(*, report: Report, user: Any, uid: str, delta: int) -> None:
    with transaction.atomic():
        report = _locked(report)
        order = list(report.blocks.order_by("position"))
        i = next((n for n, b in enumerate(order) if b.uid == uid), None)
        if i is None:
            raise BlockConflict(None)
        j = max(0, min(len(order) - 1, i + delta))
        if i == j:
            return
        order.insert(j, order.pop(i))
        for n, b in enumerate(order):
            if b.position != n:
                Block.objects.filter(pk=b.pk).update(position=n)
        _snapshot(report, user, "moved a block")


def block_remove(*, report: Report, user: Any, uid: str) -> None:
    with transaction.atomic():
        report = _locked(report)
        if not report.blocks.filter(uid=uid).delete()[0]:
            raise BlockConflict(None)
        _snapshot(report, user, "removed a block")


def report_retitle(*, report: Report, user: Any, title: str) -> None:
    with transaction.atomic():
        report = _locked(report)
        report.title = _clean_title(title)
        Report.objects.filter(pk=report.pk).update(title=report.title, title_version=F("title_version") + 1)
        _snapshot(report, user, "renamed")


def report_publish(*, report: Report, user: Any) -> ReportVersion:
    """A new version whose panels' data is computed now and stored: what readers see from now on."""
    with transaction.atomic():
        report = _locked(report)
        blocks = list(report.blocks.order_by("position"))
        frozen = {b.uid: panel_compute(report.project, b.kind, b.params) for b in blocks if b.kind != TEXT}
        version = _snapshot(report, user, "published")
        version.frozen, version.as_of = frozen, timezone.now()
        version.save(update_fields=["frozen", "as_of"])
        Report.objects.filter(pk=report.pk).update(published=version)
    return version


def version_restore(*, report: Report, user: Any, number: int) -> ReportVersion:
    """The draft becomes version `number`'s blocks again (a new version says so; nothing is lost)."""
    with transaction.atomic():
        report = _locked(report)
        old = report.versions.filter(number=number).first()
        if old is None:
            raise ReportError(f"version: no version {number}")
        current = {b.uid: b for b in report.blocks.all()}
        keep = {s["uid"] for s in old.blocks}
        report.blocks.exclude(uid__in=keep).delete()
        for pos, s in enumerate(old.blocks):
            b = current.get(s["uid"])
            if b is None:
                Block.objects.create(report=report, uid=s["uid"], kind=s["kind"], text=s["text"], params=s["params"],
                                     position=pos, updated_by=user)
            else:  # the version bump makes an editor still holding the newer text get a conflict
                Block.objects.filter(pk=b.pk).update(text=s["text"], params=s["params"], position=pos,
                                                     version=F("version") + 1, updated_by=user,
                                                     updated_at=timezone.now())
        Report.objects.filter(pk=report.pk).update(title=old.title)
        report.title = old.title
        return _snapshot(report, user, f"restored version {number}")


def report_delete(*, report: Report) -> None:
    report.delete()


__all__ = ["BlockConflict", "PanelError", "ReportError", "block_add", "block_move", "block_remove", "block_update",
           "report_create", "report_delete", "report_publish", "report_retitle", "version_restore"]
