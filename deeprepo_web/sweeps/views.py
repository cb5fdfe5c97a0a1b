"""Sweep pages. Thin: access check, form, one service call, one template."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.front.http import STOP_POLLING, form_page, is_htmx
from deeprepo_web.front.paging import cursor_param, keyset_page, newest_first, pager_for
from deeprepo_web.jobs import selectors as job_selectors
from deeprepo_web.jobs.services import templates
from deeprepo_web.sweeps import charts, selectors, services
from deeprepo_web.sweeps.errors import SweepInputError
from deeprepo_web.sweeps.forms import SPACE_PREFIX, SweepForm


@require_safe
@login_required
def sweep_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    page = keyset_page(selectors.sweep_list(project=project), keys=newest_first(), order="sweeps",
                       cursor=cursor_param(request), per_page=selectors.SWEEPS_PAGE)
    return render(request, "sweeps/list.html", {
        "project": project, "sweeps": page.rows, "pager": pager_for(request, page, label="Sweeps pages", noun="sweep"),
        "can_write": membership.allows(Role.EDITOR),
        "templates": templates.templates_for_project(project),
    })


@login_required
def sweep_new(request: HttpRequest, slug: str, template_slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    template, clusters = job_selectors.launch_choices(project=project, slug=template_slug)
    form = SweepForm(request.POST or None, template=template, clusters=clusters)
    return form_page(
        request, form, lambda d: services.sweep_create(
            project=project, template=template, user=request.user, name=d["name"], cluster=d["cluster"],
            specs=form.specs(), method=d["method"], metric=d["metric"], direction=d["direction"],
            max_trials=d["max_trials"], max_parallel=d["max_parallel"], pruner=d["pruner"],
            warmup_steps=d["warmup_steps"], startup_trials=d["startup_trials"], seed=d["seed"] or 0),
        done=lambda sweep: redirect("sweep", slug=project.slug, sweep_id=sweep.public_id),
        template="sweeps/new.html", errors=SweepInputError, prefixes=(SPACE_PREFIX,),
        context={"project": project, "template": template, "clusters": clusters, "nav_tab": "sweeps"})


@require_safe
@login_required
def sweep_detail(request: HttpRequest, slug: str, sweep_id: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    sweep = selectors.sweep_get(project=project, sweep_id=sweep_id)
    view = selectors.sweep_view(sweep=sweep)
    context = {"project": project, "sweep": sweep, "view": view, "can_write": membership.allows(Role.EDITOR),
               "parcoords": charts.parallel_coordinates(sweep, view.trials),
               "best_chart": charts.best_so_far(sweep, view.trials)}
    if is_htmx(request):
        response = render(request, "sweeps/sweep.html#live", context)
        done = sweep.is_final and not any(not t.is_final for t in view.trials)
        return HttpResponse(response.content, status=STOP_POLLING) if done else response
    return render(request, "sweeps/sweep.html", context)


@require_POST
@login_required
def sweep_cancel(request: HttpRequest, slug: str, sweep_id: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    sweep = selectors.sweep_get(project=project, sweep_id=sweep_id)
    if sweep.is_final:
        messages.info(request, f"The sweep is already {sweep.status}.")
    else:
        n = services.sweep_cancel(sweep=sweep, user=request.user)
        messages.success(request, f"Sweep cancelled: {n} open trial{'s' if n != 1 else ''} cancelled.")
    return redirect("sweep", slug=project.slug, sweep_id=sweep.public_id)
