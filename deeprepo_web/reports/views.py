"""Report pages: the project's list, the draft editor (htmx block add / save / move / remove with
autosave), versions with restore, publish, the published page and the Markdown export."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.compare.options import CompareError
from deeprepo_web.compare.query import compare_params
from deeprepo_web.reports import selectors, services
from deeprepo_web.reports.draft import report_from_comparison
from deeprepo_web.reports.exports import ExportError, html_to_pdf, report_markdown, report_print_html
from deeprepo_web.reports.models import Report
from deeprepo_web.reports.panels import KINDS, TEXT, PanelError


def _report(request: HttpRequest, slug: str, rid: str, *, role: str = Role.VIEWER) -> tuple[Report, bool]:
    project, membership = access.project_for_user(request.user, slug, role=role)
    report = get_object_or_404(Report.objects.select_related("project", "published"), project=project,
                               public_id=rid)
    return report, membership.allows(Role.EDITOR)


def _page_ctx(report: Report, can_edit: bool) -> dict[str, Any]:
    budget = settings.DEEPREPO_REPORT_INLINE_MS / 1000
    return {"project": report.project, "report": report, "can_edit": can_edit, "editing": can_edit,
            "items": selectors.draft_items(report=report, budget=budget), "kinds": KINDS.values(),
            "run_hints": selectors.project_runs_hint(project=report.project)}


def _blocks(request: HttpRequest, report: Report, error: str = "") -> HttpResponse:
    ctx = _page_ctx(report, True)
    ctx["error"] = error
    return render(request, "reports/report.html#blocks", ctx)


@require_safe
@login_required
def report_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    return render(request, "reports/list.html", {
        "project": project, "reports": selectors.reports_for_project(project=project),
        "can_edit": membership.allows(Role.EDITOR)})


@login_required
@require_POST
def report_new(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    try:
        report = services.report_create(project=project, user=request.user, title=request.POST.get("title", ""),
                                        blocks=[{"kind": TEXT, "text": ""}])
    except services.ReportError as exc:
        messages.error(request, str(exc))
        return redirect("reports", slug=project.slug)
    return redirect("report", slug=project.slug, rid=report.public_id)


@login_required
@require_POST
def report_from_compare(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    ids, raw = compare_params(request.POST)
    try:
        report = report_from_comparison(project=project, user=request.user, ids=ids, raw=raw,
                                        title=request.POST.get("title", ""))
    except (CompareError, PanelError, services.ReportError) as exc:
        messages.error(request, f"Could not write the report: {exc}")
        return redirect("reports", slug=project.slug)
    return redirect("report", slug=project.slug, rid=report.public_id)


@require_safe
@login_required
def report_detail(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    report, can_edit = _report(request, slug, rid)
    return render(request, "reports/report.html", _page_ctx(report, can_edit))


@require_safe
@login_required
def report_panel(request: HttpRequest, slug: str, rid: str, uid: str) -> HttpResponse:
    """A draft panel its page did not compute (it said "computing"): computed now, swapped in."""
    report, _ = _report(request, slug, rid)
    item = selectors.draft_item(report=report, uid=uid)
    if item is None or item.data is None:
        raise Http404("no such panel")
    return render(request, "reports/_panel.html", {"project": report.project, "report": report, "item": item})


@login_required
@require_POST
def report_title(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    try:
        services.report_retitle(report=report, user=request.user, title=request.POST.get("title", ""))
    except services.ReportError as exc:
        return render(request, "reports/_saved.html", {"error": str(exc)})
    return render(request, "reports/_saved.html", {"what": "title"})


@login_required
@require_POST
def block_add(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    kind = request.POST.get("kind", TEXT)
    params = {k: v for k, v in request.POST.items() if k not in ("kind", "csrfmiddlewaretoken", "after")}
    try:
        services.block_add(report=report, user=request.user, kind=kind, params=params,
                           after=request.POST.get("after", ""))
    except (PanelError, services.ReportError) as exc:
        return _blocks(request, report, error=f"Not added: {exc}")
    return _blocks(request, report)


@require_safe
@login_required
def block_form(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    """The fields of the panel kind picked in the add form."""
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    panel = KINDS.get(request.GET.get("kind", ""))
    return render(request, "reports/_fields.html", {"panel": panel, "params": {}, "project": report.project,
                                                    "run_hints": selectors.project_runs_hint(project=report.project)})


@login_required
@require_POST
def block_save(request: HttpRequest, slug: str, rid: str, uid: str) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        version = -1
    is_text = "text" in request.POST
    params = None if is_text else {k: v for k, v in request.POST.items() if k not in ("version", "csrfmiddlewaretoken")}
    ctx: dict[str, Any] = {"report": report, "project": report.project, "uid": uid, "editing": True}
    try:
        block = services.block_update(report=report, user=request.user, uid=uid, version=version,
                                      text=request.POST["text"] if is_text else None, params=params)
        ctx["block"] = block
    except services.BlockConflict as exc:
        ctx.update({"conflict": exc.block, "block": exc.block, "mine": request.POST.get("text", "")})
    except PanelError as exc:
        ctx["edit_error"] = str(exc)
    if is_text:
        return render(request, "reports/_text_saved.html", ctx)
    item = next((i for i in selectors.draft_items(report=report) if i.uid == uid), None)
    if item is None:
        return _blocks(request, report, error="That block was removed meanwhile.")
    return render(request, "reports/_block.html", {**ctx, "item": item, "can_edit": True,
                                                   "run_hints": selectors.project_runs_hint(project=report.project)})


@login_required
@require_POST
def block_move(request: HttpRequest, slug: str, rid: str, uid: str) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    delta = -1 if request.POST.get("dir") == "up" else 1
    try:
        services.block_move(report=report, user=request.user, uid=uid, delta=delta)
    except services.BlockConflict:
        return _blocks(request, report, error="That block was removed meanwhile.")
    return _blocks(request, report)


@login_required
@require_POST
def block_remove(request: HttpRequest, slug: str, rid: str, uid: str) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    try:
        services.block_remove(report=report, user=request.user, uid=uid)
    except services.BlockConflict:
        pass  # already gone: the list shows what is there
    return _blocks(request, report)


@login_required
@require_POST
def report_publish(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    version = services.report_publish(report=report, user=request.user)
    messages.success(request, f"Published version {version.number}: its numbers are frozen as of now.")
    return redirect("report_published", slug=slug, rid=rid)


def _version_page(request: HttpRequest, report: Report, version: Any, can_edit: bool) -> HttpResponse:
    return render(request, "reports/read.html", {
        "project": report.project, "report": report, "version": version, "can_edit": can_edit,
        "items": selectors.version_items(version=version, project=report.project), "reading": True})


@require_safe
@login_required
def report_published(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    report, can_edit = _report(request, slug, rid)
    if report.published is None:
        messages.info(request, "This report is not published yet: this is its live draft.")
        return redirect("report", slug=slug, rid=rid)
    return _version_page(request, report, report.published, can_edit)


@require_safe
@login_required
def report_versions(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    report, can_edit = _report(request, slug, rid)
    return render(request, "reports/versions.html", {"project": report.project, "report": report,
                                                     "versions": selectors.versions_page(report=report),
                                                     "can_edit": can_edit})


@require_safe
@login_required
def report_version(request: HttpRequest, slug: str, rid: str, number: int) -> HttpResponse:
    report, can_edit = _report(request, slug, rid)
    return _version_page(request, report, get_object_or_404(report.versions, number=number), can_edit)


@login_required
@require_POST
def report_restore(request: HttpRequest, slug: str, rid: str, number: int) -> HttpResponse:
    report, _ = _report(request, slug, rid, role=Role.EDITOR)
    try:
        v = services.version_restore(report=report, user=request.user, number=number)
        messages.success(request, f"Restored version {number} (saved as version {v.number}).")
    except services.ReportError as exc:
        messages.error(request, str(exc))
    return redirect("report", slug=slug, rid=rid)


@require_safe
@login_required
def report_export_md(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    """The published version's Markdown, or the draft's (live) with ?draft=1 or when unpublished."""
    report, _ = _report(request, slug, rid)
    version = report.published if request.GET.get("draft") != "1" else None
    if version is not None:
        items, as_of = selectors.version_items(version=version, project=report.project), version.as_of
    else:
        items, as_of = selectors.draft_items(report=report), None
    resp = HttpResponse(report_markdown(title=report.title, items=items, as_of=as_of),
                        content_type="text/markdown; charset=utf-8")
    resp["Content-Disposition"] = f'attachment; filename="report-{report.public_id}.md"'
    return resp


@require_safe
@login_required
def report_export_pdf(request: HttpRequest, slug: str, rid: str) -> HttpResponse:
    """The published version printed by Chromium (a few seconds: the button says so)."""
    report, _ = _report(request, slug, rid)
    version = report.published
    if version is None:
        messages.info(request, "Publish the report first: a PDF shows its published version.")
        return redirect("report", slug=slug, rid=rid)
    items = selectors.version_items(version=version, project=report.project)
    try:
        pdf = html_to_pdf(report_print_html(report=report, items=items, as_of=version.as_of))
    except ExportError as exc:
        messages.error(request, f"No PDF: {exc}")
        return redirect("report_published", slug=slug, rid=rid)
    resp = HttpResponse(pdf, content_type="application/pdf")
    resp["Content-Disposition"] = f'attachment; filename="report-{report.public_id}.pdf"'
    return resp
