"""Rollouts API: a run's rollouts page by page, one rollout with its turns (any key or a session).

They live at the runs API's paths (`/runs/{run_id}/rollouts`, where runs take rollouts in), and one
path is one route in Django: `api_root` adds them to the runs router with `rollout_reads_add`."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router

from deeprepo_web.api.auth import read_auth
from deeprepo_web.front.http import MAX_PAGE
from deeprepo_web.runs.access import run_for
from deeprepo_web.runs.models import Rollout
from deeprepo_web.trajectories.schemas import RolloutDetailOut, RolloutPage
from deeprepo_web.trajectories.selectors import rollout_page


def rollouts_list(
    request: HttpRequest, run_id: str, cursor: str = "", per_page: int = 50, step: int | None = None,
    order: str = "id", page: int | None = None,
) -> dict[str, Any]:
    """A page of rollouts: follow `next_cursor` (keyset, as fast at the end as at the start). `page=N`
    is the old numbered paging, still answered for clients that send it (an OFFSET, so slow deep)."""
    run = run_for(request, run_id)
    if page is not None:
        page = max(1, min(page, MAX_PAGE))  # past that the offset overflows; pages that far are empty anyway
    filters = {"step": step} if step is not None else {}
    found = rollout_page(run=run, cursor=cursor, per_page=max(1, min(per_page, 500)), order=order,
                         filters=filters, page=None if cursor else page)
    return {"page": None if cursor else (page or 1), "has_next": bool(found.next_cursor),
            "next_cursor": found.next_cursor or None, "rollouts": found.rows}


def rollout_detail(request: HttpRequest, run_id: str, rollout_id: int) -> Rollout:
    run = run_for(request, run_id)
    return get_object_or_404(Rollout.objects.select_related("example"), run=run, pk=rollout_id)


def rollout_reads_add(router: Router) -> None:
    router.get("/runs/{run_id}/rollouts", auth=read_auth, response=RolloutPage)(rollouts_list)
    router.get("/runs/{run_id}/rollouts/{rollout_id}", auth=read_auth, response=RolloutDetailOut)(rollout_detail)
