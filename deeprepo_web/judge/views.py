"""Rubric judge pages: the endpoint and the jobs, start one from a search, a job's verdicts, cancel, resume."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Membership, Project, Role
from deeprepo_web.crypto import SecretsUnreadable
from deeprepo_web.front.http import STOP_POLLING, error_lines, is_htmx, service_error
from deeprepo_web.judge import services
from deeprepo_web.judge.forms import EndpointForm, JudgeStartForm
from deeprepo_web.judge.models import JudgeEndpoint, JudgeJob
from deeprepo_web.labels.models import Label, Mark
from deeprepo_web.search.spec import spec_parse


def _judge_page(request: HttpRequest, project: Project, membership: Membership, *, form: EndpointForm | None = None,
                start_errors: list[str] | None = None, status: int = 200) -> HttpResponse:
    """The judge page: its jobs and the endpoint's form (`form` when a post was refused, else the stored
    endpoint's values); `start_errors`: why a job asked from a search did not start."""
    endpoint = JudgeEndpoint.objects.filter(project=project).first()
    if form is None:
        form = EndpointForm(initial={"base_url": endpoint.base_url, "model": endpoint.model,
                                     "input_per_mtok": endpoint.input_per_mtok,
                                     "output_per_mtok": endpoint.output_per_mtok} if endpoint else None)
    key_state, error = "none", ""
    if endpoint and endpoint.key_token:
        try:
            key_state = "stored" if endpoint.api_key() else "none"
        except SecretsUnreadable as exc:
            key_state, error = "unreadable", str(exc)
    ctx = {"project": project, "endpoint": endpoint, "key_state": key_state, "error": error, "form": form,
           "start_errors": start_errors or [], "can_write": membership.allows(Role.EDITOR),
           "jobs": JudgeJob.objects.filter(project=project).select_related("label").order_by("-created_at")[:100]}
    return render(request, "judge/judge.html", ctx, status=status)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def judge(request: HttpRequest, slug: str) -> HttpResponse:
    if request.method != "POST":
        return _judge_page(request, *access.project_for_user(request.user, slug))
    project, membership = access.project_for_user(request.user, slug, role=Role.EDITOR)
    form = EndpointForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.endpoint_save(project=project, base_url=data["base_url"], model=data["model"],
                                   api_key=form.new_key(), input_per_mtok=data["input_per_mtok"] or 0.0,
                                   output_per_mtok=data["output_per_mtok"] or 0.0)
            return redirect("judge", slug)
        except services.JudgeError as exc:
            service_error(form, exc)
    return _judge_page(request, project, membership, form=form, status=400)


@require_POST
@login_required
def judge_new(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug, role=Role.EDITOR)
    form = JudgeStartForm(request.POST)
    spec = spec_parse(request.POST)  # the search the rollouts come from, posted along as hidden fields
    if form.is_valid():
        data = form.cleaned_data
        label = Label.objects.filter(project=project, name=data["label_name"]).first()
        if label is None:
            form.add_error("label_name", "pick the label a “yes” proposes")
        elif spec.errors or not spec.narrowed:
            form.add_error(None, "; ".join(spec.errors) or "search: search or filter the rollouts first")
        else:
            try:
                job = services.judge_start(project=project, user=request.user, rubric=data["rubric"], label=label,
                                           query=spec.params(), limit=100 if data["limit"] is None else data["limit"])
                return redirect("judge_job", slug, job.public_id)
            except services.JudgeError as exc:
                service_error(form, exc)
    return _judge_page(request, project, membership, start_errors=error_lines(form), status=400)


def _job(request: HttpRequest, slug: str, judge_id: str, *, write: bool = False) -> JudgeJob:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR if write else Role.VIEWER)
    return get_object_or_404(JudgeJob.objects.select_related("label", "project"), project=project, public_id=judge_id)


@require_safe
@login_required
def judge_job(request: HttpRequest, slug: str, judge_id: str) -> HttpResponse:
    job = _job(request, slug, judge_id)
    verdicts = list(job.verdicts.select_related("rollout__run").order_by("-answer", "id")[:500])
    marks = {m.rollout_id: m for m in Mark.objects.filter(label=job.label, rollout_id__in=[v.rollout_id for v in verdicts])}
    rows: list[dict[str, Any]] = [{"v": v, "mark": marks.get(v.rollout_id)} for v in verdicts]
    ctx = {"project": job.project, "job": job, "rows": rows, "can_write": access.can_write(request.user, job.project)}
    if is_htmx(request, "judge-progress"):
        response = render(request, "judge/job.html#progress", ctx)
        if not job.active:
            response.status_code = STOP_POLLING
        return response
    return render(request, "judge/job.html", ctx)


@require_POST
@login_required
def judge_cancel(request: HttpRequest, slug: str, judge_id: str) -> HttpResponse:
    services.judge_cancel(job=_job(request, slug, judge_id, write=True))
    return redirect("judge_job", slug, judge_id)


@require_POST
@login_required
def judge_resume(request: HttpRequest, slug: str, judge_id: str) -> HttpResponse:
    services.judge_resume(job=_job(request, slug, judge_id, write=True))
    return redirect("judge_job", slug, judge_id)
