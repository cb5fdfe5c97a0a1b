"""The labels page (list for viewers, create for editors) and marks on a rollout (editors)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Role
from deeprepo_web.front.http import error_lines, service_error
from deeprepo_web.labels import services
from deeprepo_web.labels.forms import LabelForm, MarkForm, MarkReviewForm
from deeprepo_web.labels.models import Label, Mark
from deeprepo_web.labels.selectors import label_list
from deeprepo_web.runs.access import run_for_user


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def labels(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    form = LabelForm()
    if request.method == "POST":
        project, membership = access.project_for_user(request.user, slug, role=Role.EDITOR)
        form = LabelForm(request.POST)
        if form.is_valid():
            try:
                services.label_create(project=project, **form.cleaned_data)
                return redirect("labels", slug)
            except services.LabelError as exc:
                service_error(form, exc)
    ctx = {"project": project, "labels": label_list(project=project), "form": form,
           "can_write": membership.allows(Role.EDITOR)}
    return render(request, "labels/labels.html", ctx, status=400 if form.errors else 200)


def _back(request: HttpRequest, fallback: str) -> HttpResponse:
    return redirect(f"{fallback}#labels")


@require_POST
@login_required
def mark_add(request: HttpRequest, slug: str, run_id: str, rollout_id: int) -> HttpResponse:
    run = run_for_user(request.user, run_id, write=True, slug=slug)
    rollout = get_object_or_404(run.rollouts.select_related("run"), pk=rollout_id)
    url = reverse("trajectory", args=[slug, run.public_id, rollout.pk])
    form = MarkForm(request.POST)
    if form.is_valid():
        label = get_object_or_404(Label.objects, project=run.project, name=form.cleaned_data["label"])
        try:
            services.mark_create(label=label, rollout=rollout, user=request.user,
                                 turn_index=form.cleaned_data["turn"], note=form.cleaned_data["note"])
        except services.LabelError as exc:
            service_error(form, exc)
    if form.errors:  # the trajectory page posts this form without htmx: the reason, as plain text
        return HttpResponse("\n".join(error_lines(form)), status=400, content_type="text/plain; charset=utf-8")
    return _back(request, url)


def _mark(request: HttpRequest, slug: str, mark_id: int) -> Mark:
    project, _ = access.project_for_user(request.user, slug, role=Role.EDITOR)
    return get_object_or_404(Mark.objects.select_related("rollout__run"), pk=mark_id, label__project=project)


def _trajectory(slug: str, mark: Mark) -> str:
    return reverse("trajectory", args=[slug, mark.rollout.run.public_id, mark.rollout_id])


@require_POST
@login_required
def mark_delete(request: HttpRequest, slug: str, mark_id: int) -> HttpResponse:
    mark = _mark(request, slug, mark_id)
    url = _trajectory(slug, mark)
    services.mark_delete(mark=mark)
    return _back(request, url)


@require_POST
@login_required
def mark_review(request: HttpRequest, slug: str, mark_id: int) -> HttpResponse:
    mark = _mark(request, slug, mark_id)
    form = MarkReviewForm(request.POST)
    if not form.is_valid():
        return HttpResponse("\n".join(error_lines(form)), status=400, content_type="text/plain; charset=utf-8")
    services.mark_review(mark=mark, confirm=form.cleaned_data["confirm"], user=request.user)
    back = form.cleaned_data["next"]
    if back.startswith(f"/p/{slug}/judge/") and "//" not in back:  # a judge job's page; nothing else
        return redirect(back)
    return _back(request, _trajectory(slug, mark))
