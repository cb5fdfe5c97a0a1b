"""Rubric judge pages: the endpoint and the jobs, start one from a search, a job's verdicts, cancel, resume."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from deeprepo_web.accounts import access
from deeprepo_web.crypto import SecretsUnreadable
from deeprepo_web.front.http import STOP_POLLING, is_htmx
from deeprepo_web.judge import services
from deeprepo_web.judge.models import JudgeEndpoint, JudgeJob
from deeprepo_web.labels.models import Label, Mark
from deeprepo_web.search.spec import spec_parse


def _float(raw: str, name: str) -> float:
    try:
        return float(raw or "0")
    except ValueError:
        raise services.JudgeError(f"{name}: {raw[:20]!r} is not a number") from None


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def judge(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    endpoint = JudgeEndpoint.objects.filter(project=project).first()
    error = ""
    if request.method == "POST":
        project, membership = access.project_for_user(request.user, slug, role="editor")
        key = request.POST.get("api_key", "")
        try:
            services.endpoint_save(
                project=project, base_url=request.POST.get("base_url", "").strip(),
                model=request.POST.get("model", ""), api_key=None if key == "" and not request.POST.get("clear_key")
                else key, input_per_mtok=_float(request.POST.get("input_per_mtok", ""), "input_per_mtok"),
                output_per_mtok=_float(request.POST.get("output_per_mtok", ""), "output_per_mtok"))
            return redirect("judge", slug)
        except services.JudgeError as exc:
            error = str(exc)
    key_state = "none"
    if endpoint and endpoint.key_token:
        try:
            key_state = "stored" if endpoint.api_key() else "none"
        except SecretsUnreadable as exc:
            key_state, error = "unreadable", error or str(exc)
    ctx = {"project": project, "endpoint": endpoint, "key_state": key_state, "error": error,
           "can_write": membership.allows("editor"),
           "jobs": JudgeJob.objects.filter(project=project).select_related("label").order_by("-created_at")[:100]}
    return render(request, "judge/judge.html", ctx, status=400 if error and request.method == "POST" else 200)


@require_POST
@login_required
def judge_new(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.project_for_user(request.user, slug, role="editor")
    spec = spec_parse(request.POST)
    label = Label.objects.filter(project=project, name=request.POST.get("label_name", "")).first()
    try:
        if label is None:
            raise services.JudgeError("label: pick the label a “yes” proposes")
        try:
            limit = int(request.POST.get("limit", "100"))
        except ValueError:
            raise services.JudgeError("limit: a whole number of rollouts") from None
        if spec.errors or not spec.narrowed:
            raise services.JudgeError("; ".join(spec.errors) or "search: search or filter the rollouts first")
        job = services.judge_start(project=project, user=request.user, rubric=request.POST.get("rubric", ""),
                                   label=label, query=spec.params(), limit=limit)
    except services.JudgeError as exc:
        return render(request, "judge/judge.html", {"project": project, "error": str(exc), "jobs": [],
                                                    "can_write": True, "key_state": "none"}, status=400)
    return redirect("judge_job", slug, job.public_id)


def _job(request: HttpRequest, slug: str, judge_id: str, *, write: bool = False) -> JudgeJob:
    project, _ = access.project_for_user(request.user, slug, role="editor" if write else "viewer")
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
