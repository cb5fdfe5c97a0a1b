"""Compare, checkpoint progression, code-repair patch view and the price editor (issue 6)."""

from __future__ import annotations

import math
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.analysis.cost import DEFAULT_PRICES
from deeprepo_web.compare import checkpoints as ckpt
from deeprepo_web.compare import comparison as cmp
from deeprepo_web.compare import configs, curves, diffs
from deeprepo_web.compare.exports import comparison_csv, comparison_markdown
from deeprepo_web.compare.options import CompareError
from deeprepo_web.compare.query import compare_params, comparison_for, number_param
from deeprepo_web.runs import selectors
from deeprepo_web.runs.access import run_for_user
from deeprepo_web.runs.models import Example, ModelPrice, Rollout

PALETTE = ["#3b5bdb", "#e8590c", "#2b8a3e", "#ae3ec9", "#c92a2a", "#1098ad", "#f59f00", "#5f3dc4", "#495057",
           "#d6336c"]
STRIP_POINTS = 2000


def _num(v: float) -> float | None:
    return None if v is None or math.isnan(v) else round(float(v), 6)


def _example_names(ids: list[str]) -> list[str]:
    """Rows are named by the example's key (its id or prompt excerpt), as every other page names it."""
    names = dict(Example.objects.filter(pk__in=[int(i) for i in ids if i.isdigit()]).values_list("pk", "key"))
    return [names.get(int(i), i) if i.isdigit() else i for i in ids]


def comparison_context(c: cmp.Comparison, *, links: bool) -> dict[str, Any]:
    """What the compare table template needs; `links=False` for share pages (no way into the project)."""
    runs = []
    for i, d in enumerate(c.runs):
        runs.append({"data": d, "color": PALETTE[i % len(PALETTE)], "is_base": i == c.baseline})
    rows = []
    for row in c.rows:
        cells = []
        for i, cell in enumerate(row.cells):
            delta = row.deltas[i] if i < len(row.deltas) else None
            tone = ""
            if delta is not None:
                if delta.diff.too_small:
                    tone = "small"
                elif not delta.significant:
                    tone = "flat"
                elif delta.better == 0:
                    tone = "changed"
                else:
                    up = delta.diff.estimate > 0
                    tone = "good" if (up == (delta.better > 0)) else "bad"
            cells.append({"cell": cell, "delta": cmp.delta_text(delta, row), "tone": tone,
                          "title": delta.diff.message if delta else "", "run": c.runs[i]})
        rows.append({"row": row, "cells": cells})
    effects = []
    for e, dr in c.effects:
        effects.append({
            "label": e.label or f"{c.runs[e.a].letter} → {c.runs[e.b].letter}",
            "a": c.runs[e.a], "b": c.runs[e.b], "diff": dr,
            "abs": "—" if math.isnan(dr.estimate) else f"{dr.estimate:+.3f}",
            "rel": "—" if math.isnan(dr.rel_estimate) else f"{100 * dr.rel_estimate:+.1f}%",
            "ci": "" if dr.too_small or math.isnan(dr.lo) else f"{dr.lo:+.3f} to {dr.hi:+.3f}",
            "rel_ci": "" if dr.too_small or math.isnan(dr.rel_lo) else f"{100 * dr.rel_lo:+.1f}% to {100 * dr.rel_hi:+.1f}%",
            "tone": "small" if dr.too_small else ("good" if dr.lo > 0 else ("bad" if dr.hi < 0 else "flat")),
        })
    keys, per_example = cmp.per_example_rewards(c)
    chart = {
        "runs": [
            {"id": d.run.public_id, "letter": d.letter, "name": d.run.name, "color": PALETTE[i % len(PALETTE)],
             "rewards": [None if math.isnan(v) else round(float(v), 6) for v in d.reward[:STRIP_POINTS]],
             "base": i == c.baseline, "mean": _num(c.rows[0].cells[i].value), "lo": _num(c.rows[0].cells[i].lo),
             "hi": _num(c.rows[0].cells[i].hi)}
            for i, d in enumerate(c.runs)
        ],
    }
    return {
        "cmp": c, "runs": runs, "rows": rows, "behaviour": cmp.behaviour_rows(c), "effects": effects,
        "example_rows": list(zip(_example_names(keys), per_example, strict=True)), "chart": chart,
        "links": links,
    }


@require_safe
@login_required
def compare(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    ids, raw = compare_params(request.GET)
    ctx: dict[str, Any] = {"project": project, "membership": membership, "raw": raw, "ids": ids,
                           "can_edit": membership.allows(Role.EDITOR)}
    if not ids:
        ctx["recent"] = selectors.run_list(project=project)[:100]
        return render(request, "compare/compare.html", ctx)
    try:
        c = comparison_for(project, ids, raw)
    except CompareError as exc:
        ctx["error"] = str(exc)
        ctx["recent"] = selectors.run_list(project=project)[:100]
        return render(request, "compare/compare.html", ctx, status=400)
    fmt = request.GET.get("format", "")
    title = request.GET.get("title", "").strip()[:200] or "Before / after"
    if fmt in ("md", "markdown"):
        resp = HttpResponse(comparison_markdown(c, title=title), content_type="text/markdown; charset=utf-8")
        resp["Content-Disposition"] = 'attachment; filename="comparison.md"'
        return resp
    if fmt == "csv":
        resp = HttpResponse(comparison_csv(c), content_type="text/csv; charset=utf-8")
        resp["Content-Disposition"] = 'attachment; filename="comparison.csv"'
        return resp
    per_run = curves.curve_keys(c)
    keys = sorted({k for run_keys in per_run.values() for k in run_keys})[:curves.MAX_KEYS]
    ctx.update(comparison_context(c, links=True))
    ctx["series_keys"] = keys
    ctx["chart"]["keys"] = keys
    ctx["chart"]["key"] = curves.first_key(keys)
    for run in ctx["chart"]["runs"]:
        run["keys"] = per_run.get(run["id"], [])  # the page fetches a curve only from runs that have it
    # The zero-X rate is offered for the tools these runs called, most used first.
    ctx["zero_tools"] = list(dict.fromkeys(t for d in c.runs for t in d.tools_used))[:50]
    ctx["query"] = request.GET.urlencode()
    if c.options.zero is not None and not raw.get("zero"):
        ctx["raw"] = {**raw, "zero": c.options.zero.query}
    ctx["share_params"] = {"runs": [d.run.public_id for d in c.runs], **{k: v for k, v in raw.items() if v}}
    ctx["config_rows"] = configs.config_rows([d.run for d in c.runs])
    ctx["config_differs"] = sum(r.differs for r in ctx["config_rows"])
    return render(request, "compare/compare.html", ctx)


# ---------------------------------------------------------------- checkpoints



@require_safe
@login_required
def checkpoints(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    try:
        threshold = number_param(request.GET.get("pass"), "pass", 1.0)
        prog = ckpt.progression(run=run, threshold=threshold, a=request.GET.get("a"), b=request.GET.get("b"))
    except CompareError as exc:
        return render(request, "compare/checkpoints.html", {"project": run.project, "run": run, "error": str(exc)},
                      status=400)
    chart = {
        "steps": [p.step for p in prog.points],
        "mean": [p.ci.estimate for p in prog.points],
        "lo": [None if math.isnan(p.ci.lo) else p.ci.lo for p in prog.points],
        "hi": [None if math.isnan(p.ci.hi) else p.ci.hi for p in prog.points],
        "pass": [p.pass_rate for p in prog.points],
    }
    return render(request, "compare/checkpoints.html", {
        "project": run.project, "run": run, "prog": prog, "chart": chart, "threshold": threshold,
        "compare_ids": ",".join(p.run.public_id for p in prog.points[:10]),
    })


# ---------------------------------------------------------------- patch view


@require_safe
@login_required
def patch_view(request: HttpRequest, slug: str, run_id: str, rollout_id: int) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    rollout = get_object_or_404(Rollout.objects.select_related("example"), run=run, pk=rollout_id)
    mode = "split" if request.GET.get("mode") == "split" else "unified"
    return render(request, "compare/patch.html", {
        "project": run.project, "run": run, **diffs.patch_context(rollout, mode=mode), "links": True,
    })


# ---------------------------------------------------------------- prices


@require_safe
@login_required
def prices(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    rows = list(ModelPrice.objects.filter(project=project).order_by("model_pattern")[:500])
    overridden = {r.model_pattern.lower() for r in rows}
    defaults = [(k, p) for k, p in sorted(DEFAULT_PRICES.items()) if k not in overridden]
    return render(request, "compare/prices.html", {
        "project": project, "rows": rows, "defaults": defaults, "can_edit": membership.allows(Role.EDITOR),
    })


@login_required
@require_POST
def price_save(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    pattern = request.POST.get("model_pattern", "").strip().lower()
    if request.POST.get("delete"):
        ModelPrice.objects.filter(project=project, model_pattern=pattern).delete()
        messages.success(request, f"Removed the price for {pattern!r}.")
        return redirect("prices", slug=project.slug)
    try:
        if not pattern or len(pattern) > 200:
            raise CompareError("model pattern: 1 to 200 characters")
        inp = number_param(request.POST.get("input_per_mtok"), "input price", math.nan)
        out = number_param(request.POST.get("output_per_mtok"), "output price", math.nan)
        if math.isnan(inp) or math.isnan(out) or inp < 0 or out < 0 or inp > 1e5 or out > 1e5:
            raise CompareError("prices: give input and output USD per million tokens, between 0 and 100000")
    except CompareError as exc:
        messages.error(request, str(exc))
        return redirect("prices", slug=project.slug)
    ModelPrice.objects.update_or_create(project=project, model_pattern=pattern,
                                        defaults={"input_per_mtok": inp, "output_per_mtok": out})
    messages.success(request, f"Saved the price for {pattern!r}.")
    return redirect("prices", slug=project.slug)
