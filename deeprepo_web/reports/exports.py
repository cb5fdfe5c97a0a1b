"""A report as Markdown (tables included) and as PDF (Chromium's print of the page, with the print
stylesheet). Both read the same items the page shows: a published version's stored data."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string

from deeprepo_web.reports.models import Report
from deeprepo_web.reports.panels import KINDS, TEXT
from deeprepo_web.reports.selectors import Item

PDF_TIMEOUT = 120
CSS_FILES = ("app.css", "css/compare.css", "css/reports.css")


class ExportError(RuntimeError):
    pass


def report_markdown(*, title: str, items: list[Item], as_of: datetime | None = None) -> str:
    out = [f"# {' '.join(title.split())}", ""]
    if as_of is not None:
        out += [f"_Data as of {as_of:%Y-%m-%d %H:%M} UTC._", ""]
    for item in items:
        if item.kind == TEXT:
            out += [item.text.strip(), ""]
            continue
        panel = KINDS.get(item.kind)
        data = item.data or {}
        if panel is None or "gone" in data or "error" in data:
            out += [f"> {data.get('gone') or data.get('error') or 'unknown panel'}", ""]
            continue
        out += [f"### {panel.label}", "", panel.markdown(item.params, data).strip(), ""]
    return "\n".join(out).rstrip() + "\n"


def _css() -> str:
    parts = []
    for name in CSS_FILES:
        path = finders.find(name)
        if path:
            parts.append(Path(str(path)).read_text(encoding="utf-8"))
    return "\n".join(parts)


def report_print_html(*, report: Report, items: list[Item], as_of: datetime | None) -> str:
    """A standalone page (styles inline, no script) for Chromium to print."""
    return render_to_string("reports/print.html", {"report": report, "items": items, "as_of": as_of,
                                                    "css": _css(), "reading": True})


def html_to_pdf(html: str) -> bytes:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise ExportError("Chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="report-pdf-") as tmp:
        page, pdf = Path(tmp) / "report.html", Path(tmp) / "report.pdf"
        page.write_text(html, encoding="utf-8")
        # An argument list, no shell: nothing of the report reaches a command line.
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--no-first-run", "--no-pdf-header-footer", f"--user-data-dir={tmp}/profile",
               f"--print-to-pdf={pdf}", page.as_uri()]
        done = subprocess.run(cmd, capture_output=True, timeout=PDF_TIMEOUT, check=False)  # noqa: S603
        if not pdf.exists() or pdf.stat().st_size == 0:
            raise ExportError(f"Chromium made no PDF (exit {done.returncode}): {done.stderr.decode()[-400:]}")
        return pdf.read_bytes()
