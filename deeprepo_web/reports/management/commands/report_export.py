"""`manage.py report_export ID --pdf|--md [--out FILE] [--draft]`: a report's published version (or
its live draft) as Markdown or as a PDF printed by Chromium."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from deeprepo_web.reports import selectors
from deeprepo_web.reports.exports import ExportError, html_to_pdf, report_markdown, report_print_html
from deeprepo_web.reports.models import Report


class Command(BaseCommand):
    help = "Export a report (its published version, or --draft) as Markdown or PDF."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("report_id", help="the report's id (as in its URL)")
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument("--pdf", action="store_true")
        kind.add_argument("--md", action="store_true")
        parser.add_argument("--out", help="file to write (default: report-ID.pdf|md; '-' for stdout, Markdown only)")
        parser.add_argument("--draft", action="store_true", help="the live draft instead of the published version")

    def handle(self, *args: Any, **opts: Any) -> None:
        report = Report.objects.select_related("project", "published").filter(public_id=opts["report_id"]).first()
        if report is None:
            raise CommandError(f"no report {opts['report_id']!r}")
        version = None if opts["draft"] else report.published
        if version is None and not opts["draft"]:
            raise CommandError("the report is not published: publish it, or export the live draft with --draft")
        items = (selectors.version_items(version=version, project=report.project) if version
                 else selectors.draft_items(report=report))
        as_of = version.as_of if version else None
        ext = "pdf" if opts["pdf"] else "md"
        out = opts.get("out") or f"report-{report.public_id}.{ext}"
        if opts["md"]:
            text = report_markdown(title=version.title if version else report.title, items=items, as_of=as_of)
            if out == "-":
                sys.stdout.write(text)
                return
            Path(out).write_text(text, encoding="utf-8")
        else:
            if version is None:
                report.published = None  # the print page reads `report.published`: the draft has none
            try:
                Path(out).write_bytes(html_to_pdf(report_print_html(report=report, items=items, as_of=as_of)))
            except ExportError as exc:
                raise CommandError(str(exc)) from None
        self.stdout.write(f"wrote {out}")
