"""Job and cluster pages. Thin: access check, form, one service call, one template."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.front.http import STOP_POLLING, form_page, is_htmx
from deeprepo_web.front.paging import cursor_param, keyset_page, newest_first, pager_for
from deeprepo_web.jobs import selectors
from deeprepo_web.jobs.forms import PARAM_PREFIX, RES_PREFIX, ClusterForm, LaunchForm, TemplateForm
from deeprepo_web.jobs.models import Cluster, ClusterKind, JobTemplate
from deeprepo_web.jobs.services import clusters, launch, templates
from deeprepo_web.jobs.services.errors import JobInputError, JobStateError


@require_safe
@login_required
def job_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    page = keyset_page(selectors.job_list(project=project), keys=newest_first(), order="jobs",
                       cursor=cursor_param(request), per_page=selectors.JOBS_PAGE)
    active = any(not j.is_final for j in page.rows)
    context = {
        "project": project, "membership": membership, "jobs": page.rows, "active": active,
        "pager": pager_for(request, page, label="Jobs pages", noun="job"),
        "can_write": membership.allows(Role.EDITOR),
        "templates": templates.templates_for_project(project),
        "clusters": list(Cluster.objects.filter(project=project)),
    }
    if is_htmx(request):
        response = render(request, "jobs/list.html#table", context)
        return response if active else HttpResponse(response.content, status=STOP_POLLING)
    return render(request, "jobs/list.html", context)


@login_required
def job_launch(request: HttpRequest, slug: str, template_slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    template, clusters = selectors.launch_choices(project=project, slug=template_slug)
    form = LaunchForm(request.POST or None, template=template, clusters=clusters)
    return form_page(
        request, form, lambda d: launch.job_launch(
            project=project, template=template, user=request.user, name=d["job_name"],
            cluster=d["cluster"], params=form.params(), resources=form.resources()),
        done=lambda job: redirect("job", slug=project.slug, job_id=job.public_id),
        template="jobs/launch.html", errors=JobInputError, prefixes=(PARAM_PREFIX, RES_PREFIX),
        context={"project": project, "template": template, "clusters": clusters, "nav_tab": "jobs"})


@require_safe
@login_required
def job_detail(request: HttpRequest, slug: str, job_id: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    job = selectors.job_get(project=project, job_id=job_id)
    context = {"project": project, "job": job, "events": selectors.job_events(job=job),
               "attempts": selectors.job_attempts(job=job), "can_write": membership.allows(Role.EDITOR)}
    if is_htmx(request):
        response = render(request, "jobs/job.html#live", context)
        return HttpResponse(response.content, status=STOP_POLLING) if job.is_final else response
    return render(request, "jobs/job.html", context)


@login_required
@require_POST
def job_cancel(request: HttpRequest, slug: str, job_id: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    job = selectors.job_get(project=project, job_id=job_id)
    try:
        launch.job_cancel(job=job, user=request.user)
    except JobStateError as e:
        messages.error(request, str(e))
    return redirect("job", slug=project.slug, job_id=job.public_id)


# ---------------------------------------------------------------- templates


@login_required
def template_edit(request: HttpRequest, slug: str, template_id: int | None = None) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    template = None
    if template_id is not None:
        template = get_object_or_404(JobTemplate.objects, project=project, pk=template_id)
    initial = None
    if template is not None:
        initial = {"slug": template.slug, "name": template.name, "kind": template.kind,
                   "description": template.description, "command_template": template.command_template,
                   "params_schema": json.dumps(template.params_schema, indent=2),
                   "import_outputs": template.import_outputs, "max_node_retries": template.max_node_retries,
                   **{f"{RES_PREFIX}{k}": v for k, v in template.resources.items()}}
    form = TemplateForm(request.POST or None, initial=initial)

    def done(saved: JobTemplate) -> HttpResponse:
        messages.success(request, f"template {saved.name} saved")
        return redirect("job_launch", slug=project.slug, template_slug=saved.slug)

    return form_page(
        request, form, lambda d: templates.template_save(
            project=project, template=template, slug=d["slug"], name=d["name"], kind=d["kind"],
            description=d["description"], command_template=d["command_template"],
            params_schema=d["params_schema"], import_outputs=d["import_outputs"],
            resources=form.resources(), max_node_retries=d["max_node_retries"] or 0),
        done=done, template="jobs/template_edit.html", errors=JobInputError, prefixes=(RES_PREFIX,),
        context={"project": project, "template": template})


# ---------------------------------------------------------------- clusters


@require_safe
@login_required
def cluster_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    return render(request, "jobs/clusters.html", {
        "project": project, "clusters": selectors.clusters_with_workers(project=project),
        "can_admin": membership.allows(Role.ADMIN), "kinds": ClusterKind.choices,
    })


@login_required
def cluster_edit(request: HttpRequest, slug: str, cluster_id: int | None = None) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    cluster = selectors.cluster_get(project=project, cluster_id=cluster_id) if cluster_id else None
    kind = cluster.kind if cluster else request.GET.get("kind") or request.POST.get("kind") or ""
    if kind not in ClusterKind.values:
        return redirect("clusters", slug=project.slug)
    form = ClusterForm(request.POST or None, kind=kind, cluster=cluster)

    def done(saved: Cluster) -> HttpResponse:
        messages.success(request, f"cluster {saved.name} saved")
        return redirect("cluster_edit", slug=project.slug, cluster_id=saved.pk)

    return form_page(
        request, form, lambda d: clusters.cluster_save(
            project=project, cluster=cluster, name=d["name"], kind=kind, settings_in=form.settings_in(),
            secrets_in=form.secrets_in(), queue=d.get("queue") or ""),
        done=done, template="jobs/cluster_edit.html", errors=JobInputError,
        context={"project": project, "cluster": cluster, "kind": kind})


@login_required
@require_POST
def cluster_test(request: HttpRequest, slug: str, cluster_id: int) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role=Role.ADMIN)
    cluster = selectors.cluster_get(project=project, cluster_id=cluster_id)
    clusters.cluster_test(cluster=cluster)
    if is_htmx(request):
        return render(request, "jobs/cluster_edit.html#test", {"project": project, "cluster": cluster})
    return redirect("cluster_edit", slug=project.slug, cluster_id=cluster.pk)
