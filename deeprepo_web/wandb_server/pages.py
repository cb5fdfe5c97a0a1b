"""The run page's Logs tab: the console output and alerts of a run logged through the W&B SDK."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from deeprepo_web.front.http import STOP_POLLING, is_htmx
from deeprepo_web.runs.access import run_for_user
from deeprepo_web.runs.models import FINAL_RUN_STATUSES
from deeprepo_web.wandb_server.console import run_logs


@login_required
@require_GET
def run_logs_page(request: HttpRequest, slug: str, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id, slug=slug)
    final = run.status in FINAL_RUN_STATUSES
    context = {"project": run.project, "run": run, "logs": run_logs(run=run), "final": final}
    if is_htmx(request):
        response = render(request, "wandb_server/logs.html#live", context)
        return HttpResponse(response.content, status=STOP_POLLING) if final else response
    return render(request, "wandb_server/logs.html", context)
