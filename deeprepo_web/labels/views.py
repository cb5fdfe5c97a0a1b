"""The labels page (list for viewers, create for editors) and marks on a rollout (editors)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from deeprepo_web.accounts import access
from deeprepo_web.labels import services
from deeprepo_web.labels.models import Label, Mark
from deeprepo_web.labels.selectors import label_list
from deeprepo_web.runs.access import run_for_user


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def labels(request: HttpRequest, slug: str) -> HttpResponse:
    project, membership = access.project_for_user(request.user, slug)
    error = ""
    if request.method == "POST":
        project, membership = access.project_for_user(request.user, slug, role="editor")
        try:
            services.label_create(project=project, name=request.POST.get("name", ""),
                                  colour=request.POST.get("colour", "#6b7280"),
                                  description=request.POST.get("description", ""))
            return redirect("labels", slug)
        except services.LabelError as exc:
            error = str(exc)
    ctx = {"project": project, "labels": label_list(project=project), "error": error,
           "can_write": membership.allows("editor"), "form": request.POST if error else {}}
    return render(request, "labels/labels.html", ctx, status=400 if error else 200)


def _back(request: HttpRequest, fallback: str) -> HttpResponse:
    return redirect(f"{fallback}#labels")


@require_POST
@login_required
def mark_add(request: HttpRequest, slug: str, run_id: str, rollout_id: int) -> HttpResponse:
    run = run_for_user(request.user, run_id, write=True, slug=slug)
    rollout = get_object_or_404(run.rollouts.select_related("run"), pk=rollout_id)
    label = get_object_or_404(Label.objects, project=run.project, name=request.POST.get("label", ""))
    raw_turn = request.POST.get("turn", "").strip()
    url = reverse("trajectory", args=[slug, run.public_id, rollout.pk])
    try:
        turn = int(raw_turn) if raw_turn else None
        services.mark_create(label=label, rollout=rollout, user=request.user, turn_index=turn,
                             note=request.POST.get("note", ""))
    except ValueError:
        return HttpResponse(f"turn: {raw_turn[:20]!r} is not a turn number", status=400, content_type="text/plain")
    except services.LabelError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain")
    return _back(request, url)


def _mark(request: HttpRequest, slug: str, mark_id: int) -> Mark:
    project, _ = access.project_for_user(request.user, slug, role="editor")
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
    services.mark_review(mark=mark, confirm=request.POST.get("confirm") == "1", user=request.user)
    back = request.POST.get("next", "")
    if back.startswith(f"/p/{slug}/judge/") and "//" not in back:  # a judge job's page; nothing else
        return redirect(back)
    return _back(request, _trajectory(slug, mark))
