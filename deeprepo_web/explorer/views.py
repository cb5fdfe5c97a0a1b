"""Runs explorer (/p/<slug>/) and run page (/p/<slug>/runs/<id>/): thin views over explorer.selectors."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.audit.context import actor_name
from deeprepo_web.explorer import grouping, selectors
from deeprepo_web.explorer.columns import FIXED, TABLE, columns_for, columns_save
from deeprepo_web.explorer.evalsummary import (
    eval_mean_rewards,
    is_curve,
    run_eval_summary,
    scoreboard,
    wants_summary,
)
from deeprepo_web.explorer.health import grpo_health_cached
from deeprepo_web.explorer.live import POLL_ACTIVE, POLL_IDLE, run_live_state
from deeprepo_web.explorer.rows import run_row_html
from deeprepo_web.front.http import is_htmx
from deeprepo_web.front.paging import cursor_param, pager_for
from deeprepo_web.labels.selectors import run_label_counts, with_label_counts
from deeprepo_web.runs.access import run_for_user
from deeprepo_web.runs.axes import metric_axes_for
from deeprepo_web.runs.deletion import run_contents, run_delete_request
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, MetricSeries, Rollout, Run, RunKind, RunStatus
from deeprepo_web.runs.services import ingest_refusals

PER_PAGE = 50
MAX_OVERLAY = 8
OVERLAY_CHOICES = 50

def _query(request: HttpRequest) -> selectors.RunQuery:
    get = request.GET
    return selectors.RunQuery(
        status=get.get("status", "")[:20],
        kind=get.get("kind", "")[:20],
        model=get.get("model", "")[:500],
        environment=get.get("environment", "")[:500],
        tag=get.get("tag", "")[:200],
        q=get.get("q", "").strip()[:200],
        label=get.get("label", "")[:100],
        sort=get.get("sort", "-created")[:520] or "-created",
        group=get.get("group", "").strip()[:200],
    )


def _rewards(runs: list[Run]) -> dict[int, selectors.RunReward]:
    """The reward column: the reward series, else (evals) the mean reward of the rollouts."""
    rewards = selectors.run_rewards(runs=runs)
    means = eval_mean_rewards(runs=[r for r in runs if r.pk not in rewards])
    for pk, (mean, n) in means.items():
        rewards[pk] = selectors.RunReward(key=f"mean reward of {n} rollout{'s' if n != 1 else ''}", last=mean,
                                          points=[])
    return rewards


def _qs(query: selectors.RunQuery, **changes: Any) -> str:
    params = {k: v for k, v in {**query.__dict__, **changes}.items()
              if v not in ("", None) and k != "group_paths"}  # resolved from `group` again
    if params.get("sort") == "-created":
        params.pop("sort")
    return urlencode(params)


@require_safe
@login_required
def project(request: HttpRequest, slug: str) -> HttpResponse:
    proj, membership = access.project_for_user(request.user, slug)
    query = _query(request)
    table_only = is_htmx(request, "runs-table")
    # The table partial needs the config keys only to resolve (or say it cannot find) a group-by key.
    group_keys = grouping.config_keys(project=proj) if query.group or not table_only else []
    if query.group:
        query.group_paths = tuple(grouping.group_paths(query.group, group_keys))
    found = selectors.run_table(project=proj, query=query, cursor=cursor_param(request), per_page=PER_PAGE)
    runs = found.rows
    rewards = _rewards(runs)
    project_url = reverse("project", args=[proj.slug])
    columns = columns_for(user=request.user, project=proj)
    rows: list[SafeString] = []
    previous: object = object()
    for run in runs:
        group = None
        if query.group_paths:  # a name that matches no key groups nothing (the page lists the keys)
            value = getattr(run, "group_value", None)
            if value != previous:
                group = "—" if value is None else str(value)
                previous = value
        # One reverse() per page, not per row: a run's URL is the project's plus its id.
        rows.append(run_row_html(run, url=f"{project_url}runs/{run.public_id}/", reward=rewards.get(run.pk),
                                 group_key=" / ".join(query.group_paths) or query.group, group=group,
                                 labels=run_label_counts(run), config_keys=columns.config))
    sort_desc = query.sort.startswith("-")
    context: dict[str, Any] = {
        "project": proj,
        "project_url": project_url,
        "membership": membership,
        "query": query,
        "group_keys": group_keys,
        "rows": rows,
        "columns": columns,
        "pager": pager_for(request, found, label="Runs pages", noun="run", load_via="runs-table-loader"),
        "table_columns": TABLE,
        "table_width": len(TABLE) + len(columns.config),
        "sort_key": query.sort.lstrip("-"),
        "sort_desc": sort_desc,
        "sort_links": {
            **{name: _qs(query, sort=f"-{name}" if query.sort == name else name)
               for name in ("name", "status", "kind", "model", "environment")},
            **{name: _qs(query, sort=name if query.sort == f"-{name}" else f"-{name}")
               for name in ("started", "created", "metric:reward")},
        },
    }
    if table_only:
        return render(request, "explorer/runs.html#table", context)
    context["facets"] = selectors.run_facets(project=proj)
    context["fixed_columns"] = FIXED
    context["statuses"] = RunStatus.values
    context["kinds"] = RunKind.values
    return render(request, "explorer/runs.html", context)


MAX_LIVE_ROWS = 100


@require_POST
@login_required
def project_columns(request: HttpRequest, slug: str) -> HttpResponse:
    """Save the runs table's columns of this user in this project, then show the table again."""
    proj, _ = access.project_for_user(request.user, slug)
    columns_save(user=request.user, project=proj, shown=request.POST.getlist("col"),
                 config=request.POST.getlist("config"), known_keys=grouping.config_keys(project=proj))
    back = request.POST.get("next", "")
    project_url = reverse("project", args=[proj.slug])
    return redirect(back if back.startswith(project_url + "?") else project_url)


@require_safe
@login_required
def project_rows(request: HttpRequest, slug: str) -> JsonResponse:
    """Fresh table rows of the given runs: the explorer re-reads its running rows with this."""
    proj, _ = access.project_for_user(request.user, slug)
    ids = [i for i in request.GET.get("ids", "").split(",") if i][:MAX_LIVE_ROWS]
    runs = list(with_label_counts(Run.objects.filter(project=proj, public_id__in=ids),
                                  name=request.GET.get("label", "")[:100]))
    rewards = _rewards(runs)
    project_url = reverse("project", args=[proj.slug])
    keys = columns_for(user=request.user, project=proj).config
    rows = {run.public_id: run_row_html(run, url=f"{project_url}runs/{run.public_id}/", reward=rewards.get(run.pk),
                                        group_key="", group=None, labels=run_label_counts(run), config_keys=keys)
            for run in runs}
    return JsonResponse({"rows": rows})


@require_safe
@login_required
def run_detail(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    series = list(
        MetricSeries.objects.filter(run=run).order_by("key").values("key", "count", "last_value", "min_value")[:2000]
    )
    overlay: list[dict[str, str]] = []
    for other_id in request.GET.get("overlay", "").split(",")[:MAX_OVERLAY]:
        other_id = other_id.strip()
        if not other_id or other_id == run.public_id or any(o["id"] == other_id for o in overlay):
            continue
        try:
            other = run_for_user(request.user, other_id)
        except Http404:
            continue  # a run the user may not read is silently left out of the overlay
        overlay.append({"id": other.public_id, "name": other.name,
                        "healthUrl": reverse("run_health", args=[other.project.slug, other.public_id])})
    evals = list(Run.objects.filter(parent=run).order_by("checkpoint_step", "created_at")[:200])
    has_step_rollouts = Rollout.objects.filter(run=run, step__isnull=False).exists()
    summary = run_eval_summary(run=run) if wants_summary(run=run, has_step_rollouts=has_step_rollouts) else None
    curves: list[dict[str, Any]] = [{"key": s["key"], "count": s["count"]} for s in series if is_curve(s)]
    chart_config = {
        "run": {"id": run.public_id, "name": run.name},
        "overlay": overlay,
        # A series of one point (or with no finite value) is a number, not a curve: it goes to the
        # scoreboard instead.
        "keys": curves,
        # The x-axis a key defined for itself (W&B define_metric): offered as "defined x-axis".
        "xAxes": metric_axes_for(run=run, keys=[str(c["key"]) for c in curves]),
        "seriesUrl": "/api/v1/runs/",
        "healthUrl": reverse("run_health", args=[run.project.slug, run.public_id]),
        "liveUrl": reverse("run_live", args=[run.project.slug, run.public_id]),
        "live": run_live_state(run=run).as_dict(),
        "poll": {"active": POLL_ACTIVE, "idle": POLL_IDLE},
        # GRPO health needs training rollouts (with a step); without them the section stays hidden.
        "health": has_step_rollouts,
    }
    return render(request, "explorer/run.html", {
        "project": run.project,
        "run": run,
        "series_count": len(series),
        "summary": summary,
        "scoreboard": scoreboard(series=series, summary=summary),
        "evals": evals,
        "eval_rewards": {pk: r.last for pk, r in _rewards(evals).items()},
        "overlay": overlay,
        # The run page's "overlay a run" menu: the project's newest runs not drawn yet.
        "overlay_choices": list(Run.objects.filter(project=run.project).exclude(
            public_id__in=[run.public_id, *(o["id"] for o in overlay)]).order_by("-created_at")
            .only("public_id", "name")[:OVERLAY_CHOICES]),
        "chart_config": chart_config,
        "final": run.status in FINAL_RUN_STATUSES,
        "refusals": ingest_refusals(run=run),
        "can_write": access.can_write(request.user, run.project),
    })


@require_safe
@login_required
def run_live(request: HttpRequest, slug: str, run_id: str) -> JsonResponse:
    """What an open run page polls: status, the header, the newest step and rollout (explorer.live)."""
    run = run_for_user(request.user, run_id, slug=slug)
    state = run_live_state(run=run)
    header = render(request, "explorer/run.html#status", {"project": run.project, "run": run, "final": state.final})
    return JsonResponse({**state.as_dict(), "header": header.content.decode(),
                         "poll": {"active": POLL_ACTIVE, "idle": POLL_IDLE}})


@require_safe
@login_required
def run_health(request: HttpRequest, slug: str, run_id: str) -> JsonResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    return JsonResponse(grpo_health_cached(run=run))


@require_safe
@login_required
def run_redirect(request: HttpRequest, run_id: str) -> HttpResponse:
    """Short link printed by the client: /r/<id>/ -> the run page inside its project."""
    run = run_for_user(request.user, run_id)
    return redirect("run", slug=run.project.slug, run_id=run.public_id)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def run_delete(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    """GET: the confirmation, naming what goes; POST: delete now, or hand a big run to the worker."""
    run = run_for_user(request.user, run_id, write=True, slug=slug)
    if request.method == "POST":
        done = run_delete_request(run=run, actor=actor_name())
        note = "deleted" if done else "is being deleted in the background"
        messages.success(request, f"Run {run.name} ({run.public_id}) {note}.")
        return redirect("project", slug=slug)
    return render(request, "explorer/run_delete.html", {
        "project": run.project, "run": run, "contents": run_contents(run=run)})
