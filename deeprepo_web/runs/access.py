"""The run or rollout a URL names, for a user, an API key or a request: fetched here, allowed by
`accounts.access.membership_check` (the accounts app stays below runs and never imports them)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest

from deeprepo_web.accounts.access import membership_check
from deeprepo_web.accounts.models import ApiKey, Role
from deeprepo_web.runs.models import Rollout, Run


def run_for_user(user: Any, run_id: str, *, write: bool = False, slug: str | None = None) -> Run:
    """The run if the user may read (or write) it; with `slug`, it must also be of that project."""
    run = Run.objects.select_related("project").filter(public_id=run_id).first()
    if run is None or (slug is not None and run.project.slug != slug):
        raise Http404("no such run")
    membership_check(user, run.project, Role.EDITOR if write else Role.VIEWER)  # the project came with the run
    return run


def rollout_for_user(user: Any, rollout_id: int) -> Rollout:
    rollout = Rollout.objects.select_related("run__project", "example").filter(pk=rollout_id).first()
    if rollout is None:
        raise Http404("no such rollout")
    membership_check(user, rollout.run.project, Role.VIEWER)
    return rollout


def run_for_key(key: ApiKey, run_id: str) -> Run:
    run = Run.objects.filter(public_id=run_id, project=key.project).first()
    if run is None:
        raise Http404("no such run")
    return run


def run_for_principal(principal: Any, run_id: str, *, write: bool = False) -> Run:
    """For the API: the run if the caller, an API key (its own project's runs; its scopes are the
    auth's business) or a session user (a member, an editor to write), may use it."""
    if isinstance(principal, ApiKey):
        return run_for_key(principal, run_id)
    return run_for_user(principal, run_id, write=write)


def run_for(request: HttpRequest, run_id: str, *, write: bool = False) -> Run:
    """The run named in an API URL, if the caller (key or session, `api.auth`) may read it, or write it."""
    return run_for_principal(request.auth, run_id, write=write)  # type: ignore[attr-defined]
