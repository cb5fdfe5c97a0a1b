"""Share links: create (editors), list and revoke (members see the project's links; editors revoke),
and the public read-only page /s/<token> that shows one object and nothing else."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.analysis import stats
from deeprepo_web.compare import curves, diffs, pricing
from deeprepo_web.compare.options import CompareError
from deeprepo_web.compare.query import comparison_for
from deeprepo_web.compare.rundata import run_data
from deeprepo_web.compare.views import comparison_context
from deeprepo_web.runs import selectors
from deeprepo_web.runs.turns import calls_in_order, turn_count, turns_page
from deeprepo_web.sharing.models import ShareKind, ShareLink
from deeprepo_web.sharing.services import ShareError, share_create, share_resolve, share_revoke

EXPIRY_CHOICES = [("", "Never"), ("1", "1 day"), ("7", "7 days"), ("30", "30 days"), ("90", "90 days")]
SHARED_TURNS = 200


@require_safe
@login_required
def share_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    links = ShareLink.objects.filter(project=project).select_related("run", "created_by").order_by("-created_at")
    return render(request, "sharing/shares.html", {
        "project": project, "links": links[:500], "can_edit": membership.allows(Role.EDITOR),
    })


@login_required
@require_POST
def share_new(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    expires = request.POST.get("expires", "")
    params: dict[str, Any] = {}
    if request.POST.get("kind") == ShareKind.COMPARISON:
        try:
            params = json.loads(request.POST.get("params") or "{}")
        except ValueError:
            params = {}
        if not isinstance(params, dict):
            params = {}
    try:
        days = int(expires) if expires else None
        link, token = share_create(
            project=project, user=request.user, kind=request.POST.get("kind", ""),
            target=request.POST.get("target", ""), title=request.POST.get("title", ""),
            expires_in_days=days, params=params,
        )
    except ValueError as exc:
        message = str(exc) if isinstance(exc, ShareError) else "expires: must be a number of days"
        return render(request, "sharing/created.html", {"project": project, "error": message}, status=400)
    url = request.build_absolute_uri(f"/s/{token}")
    return render(request, "sharing/created.html", {"project": project, "link": link, "url": url})


@login_required
@require_POST
def share_revoke_view(request: HttpRequest, slug: str, link_id: int) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    share_revoke(link=get_object_or_404(ShareLink.objects, project=project, pk=link_id))
    return redirect("shares", slug=project.slug)


def _no_index(response: HttpResponse) -> HttpResponse:
    response["X-Robots-Tag"] = "noindex, nofollow, noarchive"
    response["Referrer-Policy"] = "no-referrer"  # the token is in the URL: never send it onwards
    response["Cache-Control"] = "private, no-store"
    return response


def _run_stats(link: ShareLink) -> dict[str, Any]:
    assert link.run is not None
    run = link.run
    data = run_data(run, "A", zero=None, prices=pricing.price_table(project=link.project))
    r = data.reward[~np.isnan(data.reward)]
    ci = stats.bootstrap_ci(r, n_resamples=5000) if r.size else None
    series = selectors.series_downsampled(run=run, key="reward", buckets=500)
    chart = None
    if series is not None and series.steps:
        chart = {"steps": series.steps, "value": series.last, "min": series.min, "max": series.max}

    def fmt(v: float, d: int = 3) -> str:
        return "—" if math.isnan(v) else f"{v:.{d}f}"

    facts = [
        ("Average reward", f"{fmt(stats.mean(r))} (σ {fmt(stats.std(r))})" if r.size else "—"),
        ("95% CI", f"{fmt(ci.lo)} – {fmt(ci.hi)}" if ci and ci.defined else "—"),
        ("Reward range", f"{fmt(float(r.min()))} — {fmt(float(r.max()))}" if r.size else "—"),
        ("Average model turns", fmt(stats.mean(data.turns), 2)),
        ("Input tokens / rollout", "—" if math.isnan(stats.mean(data.input_tokens))
         else f"{stats.mean(data.input_tokens):,.0f}"),
        ("Output tokens / rollout", "—" if math.isnan(stats.mean(data.output_tokens))
         else f"{stats.mean(data.output_tokens):,.0f}"),
        ("Rollouts", f"{data.n:,}" + (f" (step {data.step})" if data.step is not None else "")),
    ]
    return {"facts": facts, "chart": chart}


@require_safe
def shared(request: HttpRequest, token: str) -> HttpResponse:
    link = share_resolve(token=token)
    if link is None:
        raise Http404("no such link")
    ctx: dict[str, Any] = {"link": link, "title": link.title}
    if link.kind == ShareKind.COMPARISON:

        params = link.params or {}
        try:
            c = comparison_for(link.project, list(params.get("runs") or []),
                               {k: str(params.get(k) or "") for k in ("baseline", "zero", "pass", "effects")})
        except CompareError:
            raise Http404("the shared comparison no longer exists") from None
        ctx.update(comparison_context(c, links=False))
        ctx["title"] = link.title or "Comparison of " + ", ".join(d.run.name for d in c.runs)
        # A public page cannot read the series API: the curves come with the page.
        per_run = curves.curve_keys(c)
        key = curves.first_key(sorted({k for keys in per_run.values() for k in keys}))
        if key:
            ctx["chart"]["curves"] = curves.curves_embed(c, per_run, key)
        template = "sharing/shared_comparison.html"
    elif link.kind == ShareKind.RUN and link.run is not None:
        ctx.update(_run_stats(link))
        ctx["run"] = link.run
        ctx["title"] = link.title or link.run.name
        template = "sharing/shared_run.html"
    elif link.kind == ShareKind.ROLLOUT and link.rollout is not None:
        rollout = link.rollout
        turns = turns_page(rollout=rollout, start=0, limit=SHARED_TURNS)
        for t in turns:
            t.calls = calls_in_order(t)  # type: ignore[attr-defined]
        all_turns = turn_count(rollout)
        ctx.update({"rollout": rollout, "turns": turns, "all_turns": all_turns, "more_turns": all_turns > len(turns),
                    "title": link.title or f"Rollout of {rollout.run.name}"})
        if rollout.final_answer and diffs.looks_like_patch(rollout.final_answer):
            ctx.update(diffs.patch_context(rollout, mode="unified"))
        template = "sharing/shared_rollout.html"
    elif link.kind == ShareKind.REPORT and link.report is not None:
        from deeprepo_web.reports.selectors import version_items  # reports import sharing's helpers

        version = link.report.published
        if version is None:
            raise Http404("the shared report is not published")
        # Only the published version's stored data: nothing of the project is read again.
        ctx.update({"report": link.report, "version": version, "reading": True,
                    "items": version_items(version=version, project=link.project, reader_host=request.get_host()),
                    "title": link.title or version.title})
        template = "sharing/shared_report.html"
    elif link.kind == ShareKind.EXAMPLE and link.example is not None:
        example = link.example
        ctx.update({"example": example, "title": link.title or "Example"})
        if example.oracle and diffs.looks_like_patch(example.oracle):
            ctx["oracle_files"] = [{"f": f, "split": None} for f in diffs.parse_patch(example.oracle)[0]]
        template = "sharing/shared_example.html"
    else:
        raise Http404("the shared object no longer exists")
    return _no_index(render(request, template, ctx))
