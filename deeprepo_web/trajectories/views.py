"""Rollouts table, GRPO groups, trajectory, example and side-by-side compare pages.

Thin views: access check (accounts.access, 404 for outsiders), parse the query, call a selector,
render one template (or its htmx partial). Every list is paged without COUNT(*).
"""

from __future__ import annotations

import math
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_safe

from deeprepo_web.accounts import access
from deeprepo_web.front.http import float_param, int_param, is_htmx
from deeprepo_web.front.paging import cursor_param, pager_for
from deeprepo_web.labels.selectors import label_names, marks_by_turn
from deeprepo_web.runs.access import rollout_for_user, run_for_user
from deeprepo_web.runs.models import Example, Rollout
from deeprepo_web.runs.turns import body_blob, turn_count
from deeprepo_web.storage import blob_get
from deeprepo_web.trajectories import richtext, selectors
from deeprepo_web.trajectories.rows import rollout_row_html

PER_PAGE = 50
GROUPS_PER_PAGE = 20
SORTS = {"reward", "-reward", "turns", "-turns", "tokens", "-tokens"}



def _rollout(request: HttpRequest, slug: str, run_id: str, rollout_id: int) -> Rollout:
    rollout = rollout_for_user(request.user, rollout_id)
    if rollout.run.public_id != run_id or rollout.run.project.slug != slug:
        raise Http404("no such rollout")
    return rollout


def _example(request: HttpRequest, slug: str, example_id: int) -> Example:
    project, _ = access.project_for_user(request.user, slug)
    return get_object_or_404(Example.objects, pk=example_id, project=project)


def _yes_no(raw: str, name: str, errors: list[str]) -> bool | None:
    if raw in ("", "any"):
        return None
    if raw in ("yes", "1", "true"):
        return True
    if raw in ("no", "0", "false"):
        return False
    errors.append(f"{name}: use yes or no, not {raw[:40]!r}")
    return None


def parse_rollout_filter(params: Any) -> tuple[selectors.RolloutFilter, list[str]]:
    """The rollouts table's query string -> a filter, and one line per bad parameter (which is ignored)."""
    errors: list[str] = []
    get = lambda name: (params.get(name) or "").strip()  # noqa: E731
    f = selectors.RolloutFilter(
        step=int_param(get("step"), "step", errors),
        example=get("example")[:500],
        reward_min=float_param(get("reward_min"), "reward_min", errors),
        reward_max=float_param(get("reward_max"), "reward_max", errors),
        stop=get("stop")[:200],
        has_error=_yes_no(get("error"), "error", errors),
        truncated=_yes_no(get("truncated"), "truncated", errors),
        label=get("label")[:100],
    )
    return f, errors


@require_safe
@login_required
def rollouts(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    filt, errors = parse_rollout_filter(request.GET)
    sort = request.GET.get("sort", "")
    if sort not in SORTS:
        sort = ""
    found = selectors.rollout_page(run=run, cursor=cursor_param(request), per_page=PER_PAGE, order=sort or "id",
                                   filters=filt)
    rollouts = found.rows
    rewards = [r.reward for r in rollouts if r.reward is not None and math.isfinite(r.reward)]
    # The bar spans [0, 1] unless this page's rewards fall outside it.
    lo, hi = min([0.0, *rewards]), max([1.0, *rewards])
    # One reverse() per page, not per row: a trajectory's URL is this list's plus the rollout id.
    list_url = reverse("rollouts", args=[run.project.slug, run.public_id])
    # Rollouts that logged no advantage show their group's, as the trajectory page does.
    group_adv = selectors.page_group_advantages(run=run, rollouts=rollouts)
    ctx = {
        "project": run.project,
        "run": run,
        "rows": [rollout_row_html(r, url=f"{list_url}{r.pk}/", bar_span=f"{lo},{hi}", group_advantage=group_adv.get(r.pk))
                 for r in rollouts],
        "pager": pager_for(request, found, label="Rollout pages", noun="rollout", load_via="rollout-table-loader"),
        "filter": filt,
        "errors": errors,
        "sort": sort,
        "stops": selectors.rollout_stop_conditions(run=run),
        "labels": label_names(project=run.project),
        "filtered": any(request.GET.get(k) for k in ("step", "example", "reward_min", "reward_max", "stop",
                                                      "error", "truncated", "label")),
    }
    if is_htmx(request, "rollout-table"):
        return render(request, "trajectories/rollouts.html#table", ctx)
    return render(request, "trajectories/rollouts.html", ctx)


@require_safe
@login_required
def groups(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    raw = request.GET.get("step", "").strip()
    errors: list[str] = []
    step = None if raw in ("", "null", "none") else int_param(raw, "step", errors)
    nav = selectors.step_nav(run=run, step=step)
    if step is None and raw not in ("null", "none"):
        step = nav.last  # default: the latest step (the whole eval when the run has no steps)
        nav = selectors.step_nav(run=run, step=step)
    result = selectors.groups_for_step(run=run, step=step, cursor=cursor_param(request), per_page=GROUPS_PER_PAGE)
    ctx = {
        "project": run.project,
        "run": run,
        "nav": nav,
        "any_rollouts": nav.first is not None or nav.unstepped,
        "step": step,
        "result": result,
        "pager": pager_for(request, result.paging, label="Example pages", noun="example", load_via="groups-loader"),
        "errors": errors,
    }
    if is_htmx(request, "groups-body"):
        return render(request, "trajectories/groups.html#body", ctx)
    return render(request, "trajectories/groups.html", ctx)


def _turn_window(request: HttpRequest) -> tuple[int, int]:
    """(first turn index, how many) from ?from= and ?upto= (the anchor a reader jumped to)."""
    try:
        start = max(0, int(request.GET.get("from", "0")))
    except ValueError:
        start = 0
    limit = selectors.TURNS_PAGE
    try:
        upto = int(request.GET.get("upto", ""))
        # Load through the anchor plus some context after it, in one bounded response.
        limit = max(limit, min(upto - start + 10, selectors.TURNS_MAX_PAGE))
    except ValueError:
        pass
    return start, limit


def _turns_ctx(rollout: Rollout, start: int, limit: int) -> dict[str, Any]:
    turns, has_more = selectors.turn_views_page(rollout=rollout, start=start, limit=limit)
    next_from = turns[-1].turn.index + 1 if turns else start
    return {"turns": turns, "has_more": has_more, "next_from": next_from, "from": start,
            "turn_marks": marks_by_turn(rollout_id=rollout.pk)}


@require_safe
@login_required
def trajectory(request: HttpRequest, slug: str, run_id: str, rollout_id: int) -> HttpResponse:
    rollout = _rollout(request, slug, run_id, rollout_id)
    start, limit = _turn_window(request)
    siblings = selectors.group_siblings(rollout=rollout)
    ids = [s["id"] for s in siblings]
    here = ids.index(rollout.pk) if rollout.pk in ids else None
    ctx = {
        "project": rollout.run.project,
        "run": rollout.run,
        "rollout": rollout,
        "example": rollout.example,
        "siblings": siblings,
        "prev_id": ids[here - 1] if here else None,
        "next_id": ids[here + 1] if here is not None and here + 1 < len(ids) else None,
        "components": sorted((rollout.reward_components or {}).items()),
        "all_turns": turn_count(rollout),
        "group_advantage": selectors.group_advantage(rollout=rollout, siblings=siblings)
        if rollout.advantage is None else None,
        **_turns_ctx(rollout, start, limit),
    }
    return render(request, "trajectories/trajectory.html", ctx)


@require_safe
@login_required
def trajectory_turns(request: HttpRequest, slug: str, run_id: str, rollout_id: int) -> HttpResponse:
    """The next page of turns (htmx "load more"); replaces the load-more sentinel."""
    rollout = _rollout(request, slug, run_id, rollout_id)
    start, limit = _turn_window(request)
    ctx = {"project": rollout.run.project, "run": rollout.run, "rollout": rollout, **_turns_ctx(rollout, start, limit)}
    return render(request, "trajectories/trajectory.html#turns", ctx)


BODY_KINDS = {"turn", "call"}


@require_safe
@login_required
def trajectory_body(request: HttpRequest, slug: str, run_id: str, rollout_id: int, kind: str,
                    object_id: int) -> HttpResponse:
    """The full body of a turn or tool call that went to the blob store, escaped into a <pre>."""
    rollout = _rollout(request, slug, run_id, rollout_id)
    sha = body_blob(rollout=rollout, kind=kind, object_id=object_id)
    if not sha:
        raise Http404("no such body")
    try:
        data = blob_get(sha)
    except FileNotFoundError:
        return HttpResponse('<pre class="out error">The full body is missing from the blob store.</pre>')
    text = data.decode("utf-8", "replace")
    return HttpResponse(f'<pre class="out full">{richtext.plain_html(text)}</pre>')


@require_safe
@login_required
def example(request: HttpRequest, slug: str, example_id: int) -> HttpResponse:
    ex = _example(request, slug, example_id)
    found = selectors.example_rollouts_page(example=ex, cursor=cursor_param(request), per_page=PER_PAGE)
    prompt = ex.prompt
    messages = prompt if isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt) else None
    ctx = {
        "project": ex.project,
        "example": ex,
        "messages": messages,
        "prompt_text": None if messages is not None or prompt is None else richtext.pretty_json(prompt),
        "rows": found.rows,
        "pager": pager_for(request, found, label="Rollout pages", noun="rollout", load_via="example-loader"),
        "per_run": selectors.example_rewards(example=ex) if found.at_start else [],
    }
    if is_htmx(request, "example-rollouts"):
        return render(request, "trajectories/example.html#rollouts", ctx)
    return render(request, "trajectories/example.html", ctx)


def _compare_rollout(request: HttpRequest, ex: Example, raw: str, name: str) -> Rollout:
    try:
        rid = int(raw)
    except ValueError:
        raise Http404(f"{name}: not a rollout id") from None
    rollout = rollout_for_user(request.user, rid)
    if rollout.example_id != ex.pk:
        raise Http404(f"{name}: rollout of another example")
    return rollout


@require_safe
@login_required
def example_compare(request: HttpRequest, slug: str, example_id: int) -> HttpResponse:
    ex = _example(request, slug, example_id)
    picked = request.GET.getlist("r")
    if picked and not request.GET.get("a"):
        # The example page's checkboxes submit r=..&r=..; the canonical URL names them a and b.
        if len(picked) != 2 or not all(p.isdigit() for p in picked):
            error = f"pick exactly two rollouts to compare ({len(picked)} picked)"
            return render(request, "trajectories/compare.html", {"project": ex.project, "example": ex, "error": error},
                          status=400)
        url = reverse("example_compare", args=[slug, ex.pk])
        return redirect(f"{url}?a={picked[0]}&b={picked[1]}")
    a = _compare_rollout(request, ex, request.GET.get("a", ""), "a")
    b = _compare_rollout(request, ex, request.GET.get("b", ""), "b")
    start, limit = _turn_window(request)
    turns_a, more_a = selectors.turn_views_page(rollout=a, start=start, limit=limit)
    turns_b, more_b = selectors.turn_views_page(rollout=b, start=start, limit=limit)
    by_index_a = {t.turn.index: t for t in turns_a}
    by_index_b = {t.turn.index: t for t in turns_b}
    indices = sorted(set(by_index_a) | set(by_index_b))
    pairs = [(i, by_index_a.get(i), by_index_b.get(i)) for i in indices]
    for r in (a, b):
        r.all_turns = turn_count(r)  # type: ignore[attr-defined]
    ctx = {
        "project": ex.project,
        "example": ex,
        "a": a,
        "b": b,
        "sides": [(a, "A"), (b, "B")],
        "pairs": pairs,
        "has_more": more_a or more_b,
        "next_from": (indices[-1] + 1) if indices else start,
        "from": start,
    }
    return render(request, "trajectories/compare.html", ctx)
