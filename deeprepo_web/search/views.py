"""The search page (a project's, or one run's), its lazy counts, bulk labels and exports.

Thin views: the access check (accounts.access, 404 for outsiders), parse the query, call a selector.
"""

from __future__ import annotations

import tempfile
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.front.http import is_htmx
from deeprepo_web.front.paging import KeysetPage, cursor_param, pager_for
from deeprepo_web.labels.models import Label
from deeprepo_web.labels.selectors import marks_for_rollouts
from deeprepo_web.labels.services import LabelError, marks_bulk_create
from deeprepo_web.runs.access import run_for_user
from deeprepo_web.runs.models import Run
from deeprepo_web.search import exports, selectors
from deeprepo_web.search.chart import MAX_BARS, MAX_RUNS, chart_rows
from deeprepo_web.search.indexer import LAG_COUNTED, search_index_lag
from deeprepo_web.search.selectors import (
    SearchFailed,
    SearchTooCommon,
    search_chart,
    search_results,
    search_rollout_ids,
    search_scope,
)
from deeprepo_web.search.spec import MODES, spec_parse
from deeprepo_web.search.texts import FIELD_LABELS

PER_PAGE = 50
BULK_MAX = 50_000


def _trajectory_url(result: Any, slug: str) -> str:
    url = reverse("trajectory", args=[slug, result.rollout.run.public_id, result.rollout.pk])
    turn = result.turn_index
    return url if turn is None else f"{url}?upto={turn}#turn-{turn}"


@require_safe
@login_required
def search(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    spec = spec_parse(request.GET)
    scope = search_scope(project=project, spec=spec)
    found = KeysetPage[Any](rows=[], next_cursor="", prev_cursor="", at_start=True)
    failed = ""
    try:
        found = search_results(scope=scope, spec=spec, cursor=cursor_param(request), per_page=PER_PAGE)
    except SearchFailed as exc:
        failed = str(exc)
    results = found.rows
    marks = marks_for_rollouts([r.rollout.pk for r in results])
    for r in results:
        r.url = _trajectory_url(r, slug)
        r.marks = marks.get(r.rollout.pk, [])
    query = urlencode(spec.params())
    ctx = {
        "project": project, "spec": spec, "results": results,
        "pager": pager_for(request, found, label="Result pages", noun="rollout"),
        "failed": failed, "modes": MODES, "fields": FIELD_LABELS, "query": query,
        # (public id, name) pairs: the filter lists up to 500 runs, and a model each cost ~10 ms at 500.
        "runs": Run.objects.filter(project=project).order_by("-created_at").values_list("public_id", "name")[:500],
        # A search within one run is that run's Search tab: the page wears the run's header and tabs.
        "run": Run.objects.filter(project=project, public_id=spec.run).first() if spec.run else None,
        "labels": Label.objects.filter(project=project).order_by("name"),
        "can_write": membership.allows(Role.EDITOR),
        "lag_cap": LAG_COUNTED,
    }
    lag = search_index_lag()
    names = {"rollout": "newly logged rollout", "prompt": "new prompt"}
    ctx["lag_parts"] = [(n, names[src]) for src, n in lag.items() if n]
    ctx["lag_total"] = sum(lag.values())
    if is_htmx(request, "search-results"):
        return render(request, "search/search.html#results", ctx)
    return render(request, "search/search.html", ctx)


@require_safe
@login_required
def run_search(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    params = request.GET.copy()
    params["run"] = run.public_id
    return redirect(f"{reverse('search', args=[slug])}?{params.urlencode()}")


@require_safe
@login_required
def counts(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug)
    spec = spec_parse(request.GET)
    scope = search_scope(project=project, spec=spec)
    rows: list[Any] = []
    failed = ""
    too_common = False
    try:
        counts, sample = search_chart(scope=scope, spec=spec, top=MAX_RUNS)  # what the chart shows
        rows = chart_rows(counts, scope.runs_for(counts), sample)
    except SearchTooCommon:
        too_common = True
    except SearchFailed as exc:
        failed = str(exc)
    ctx = {"project": project, "rows": rows, "failed": failed, "too_common": too_common, "spec": spec,
           "query": urlencode(spec.params()), "many": f"{selectors.WALK_AFTER_HITS:,}"}
    return render(request, "search/search.html#counts", ctx)


@require_POST
@login_required
def bulk_label(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug, role=Role.EDITOR)
    spec = spec_parse(request.POST)
    scope = search_scope(project=project, spec=spec)
    back = f"{reverse('search', args=[slug])}?{urlencode(spec.params())}"
    label = Label.objects.filter(project=project, name=request.POST.get("apply_label", "")).first()
    if label is None or scope.empty or not spec.narrowed:
        return render(request, "search/bulk_done.html", {
            "project": project, "back": back,
            "error": "pick one of the project's labels" if label is None else "nothing to label: search first",
        }, status=400)
    try:
        added = marks_bulk_create(label=label, rollout_ids=search_rollout_ids(scope=scope, spec=spec, limit=BULK_MAX),
                                  user=request.user, note=request.POST.get("note", "")[:2000])
    except (LabelError, SearchFailed) as exc:
        return render(request, "search/bulk_done.html", {"project": project, "back": back, "error": str(exc)},
                      status=400)
    # Back to the same results, which now show the label, with a line saying what was done.
    messages.success(request, f"Labelled {added} more rollout{'s' if added != 1 else ''} “{label.name}” "
                              f"(rollouts that had it kept their mark; at most {BULK_MAX} a time).")
    return redirect(back)


EXPORTS = {"jsonl": "application/x-ndjson", "parquet": "application/vnd.apache.parquet", "hf": "application/zip"}


@require_safe
@login_required
def export(request: HttpRequest, slug: str, fmt: str) -> HttpResponseBase:
    project, _ = access.project_for_user(request.user, slug)
    if fmt not in EXPORTS:
        raise Http404("no such format")
    spec = spec_parse(request.GET)
    scope = search_scope(project=project, spec=spec)
    if spec.errors or not spec.narrowed:
        why = "; ".join(spec.errors) or "nothing to export: search or filter first"
        return HttpResponse(why, status=400, content_type="text/plain; charset=utf-8")
    ids = search_rollout_ids(scope=scope, spec=spec)
    name = f"{slug}-rollouts"
    if fmt == "jsonl":
        response = StreamingHttpResponse(exports.jsonl_chunks(ids), content_type=EXPORTS[fmt])
        response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        return response
    if fmt == "parquet":
        part = tempfile.TemporaryFile()
        exports.parquet_write(ids, part)
        part.seek(0)
        return FileResponse(part, as_attachment=True, filename=f"{name}.parquet", content_type=EXPORTS[fmt])
    archive = exports.hf_folder_zip(ids, title=f"{project.name} rollouts", query=urlencode(spec.params()))
    return FileResponse(archive, as_attachment=True, filename=f"{name}-dataset.zip", content_type=EXPORTS[fmt])


@require_safe
@login_required
def run_errors(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    from deeprepo_web.search.signatures import error_signatures

    run = run_for_user(request.user, run_id, slug=slug)
    sigs, span = error_signatures(run=run)
    return render(request, "search/errors.html", {"project": run.project, "run": run, "sigs": sigs, "span": span,
                                                  "max_bars": MAX_BARS})
