"""Who is acting, for audit rows written deep inside services that are not told: the request being
served (its session user, or the API key the API authenticated). Outside a request: the operator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest, HttpResponse

_request: ContextVar[HttpRequest | None] = ContextVar("audit_request", default=None)
_actor: ContextVar[str | None] = ContextVar("audit_actor", default=None)


@contextmanager
def acting_as(name: str) -> Iterator[None]:
    """Work done later for someone (a worker deleting a run an editor asked to delete) is theirs."""
    token = _actor.set(name)
    try:
        yield
    finally:
        _actor.reset(token)


def actor_name() -> str:
    if (named := _actor.get()) is not None:
        return named
    request = _request.get()
    if request is None:
        return "operator"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return str(user.get_username())
    key: Any = getattr(request, "auth", None)
    if key is not None and hasattr(key, "prefix"):
        return f"key drk_{key.prefix}"
    return "anonymous"


class AuditActorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)
