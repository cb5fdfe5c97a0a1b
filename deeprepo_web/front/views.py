"""The home page: the projects of the signed-in user."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from deeprepo_web.accounts import access


@require_safe
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "front/home.html", {"projects": access.projects_for_user(request.user)})
