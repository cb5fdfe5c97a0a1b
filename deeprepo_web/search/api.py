"""Search API: GET /api/v1/projects/{slug}/search — the search page's results as JSON (any key of the
project, or a member's session). Same parameters as the page: q, mode, in, run, step_min, step_max,
reward_min, reward_max, tool, stop, label, page."""

from __future__ import annotations

import html
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import strip_tags
from ninja import Router
from ninja.errors import HttpError

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import Project
from deeprepo_web.api.auth import read_auth
from deeprepo_web.front.http import MAX_PAGE
from deeprepo_web.labels.selectors import marks_for_rollouts
from deeprepo_web.search.selectors import SearchFailed, search_page, search_results, search_scope
from deeprepo_web.search.spec import spec_parse

router = Router(tags=["search"])


@router.get("/projects/{slug}/search", auth=read_auth)
def search(request: HttpRequest, slug: str, cursor: str = "", page: int | None = None,
           per_page: int = 50) -> dict[str, Any]:
    """Matching rollouts, newest first: follow `next_cursor`. `page=N` is the old numbered paging
    (an OFFSET), still answered for clients that send it."""
    project = get_object_or_404(Project.objects, slug=slug)
    access.project_for_principal(request.auth, project)  # type: ignore[attr-defined]
    spec = spec_parse(request.GET)
    if not spec.narrowed:
        raise HttpError(400, "; ".join(spec.errors) or "q: give a search text (or a label / filter to list)")
    scope = search_scope(project=project, spec=spec)
    try:
        per_page = max(1, min(per_page, 200))
        next_cursor = ""
        if page is not None and page > 1 and not cursor:
            page = min(page, MAX_PAGE)
            results, has_next = search_page(scope=scope, spec=spec, page=page, per_page=per_page)
        else:
            found = search_results(scope=scope, spec=spec, cursor=cursor, per_page=per_page)
            results, next_cursor, has_next = found.rows, found.next_cursor, bool(found.next_cursor)
    except SearchFailed as exc:
        raise HttpError(422, str(exc)) from exc
    marks = marks_for_rollouts([r.rollout.pk for r in results])
    out = []
    for r in results:
        url = reverse("trajectory", args=[slug, r.rollout.run.public_id, r.rollout.pk])
        turn = r.turn_index
        out.append({
            "rollout_id": r.rollout.pk, "run": r.rollout.run.public_id, "step": r.rollout.step,
            "reward": r.rollout.reward, "example": r.rollout.example.key, "hits": r.hits, "turn_index": turn,
            "url": url if turn is None else f"{url}?upto={turn}#turn-{turn}",
            "labels": sorted({m.label.name for m in marks.get(r.rollout.pk, [])}),
            # The snippet as plain text (the <mark> of the page dropped) and as the page's escaped HTML.
            "snippets": [{"where": s.where, "turn_index": s.turn_index, "text": html.unescape(strip_tags(s.html)),
                          "html": str(s.html)} for s in r.snippets],
        })
    return {"results": out, "has_next": has_next, "next_cursor": next_cursor or None,
            "page": None if cursor else (page or 1), "warnings": spec.errors}

