"""Who calls the API: an API key (Bearer drk_…) or a logged-in browser session.

Writes take a key with the ingest scope; reads take any key or a session. What the caller may see
is decided per object by accounts.access, like every other permission check."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security import HttpBearer

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey


class ApiKeyAuth(HttpBearer):
    """Any active key; with `scope`, only a key that holds it (403 for one that does not)."""

    def __init__(self, scope: str | None = None) -> None:
        super().__init__()
        self.scope = scope

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        key = access.api_key_from_secret(token)
        if key is not None and self.scope and not access.key_allows(key, self.scope):
            raise HttpError(403, "this API key may not write")
        return key


class SessionMember:
    """A logged-in browser session; membership is checked per object by the view."""

    def __call__(self, request: HttpRequest) -> Any:
        user = getattr(request, "user", None)
        return user if user is not None and user.is_authenticated else None


ingest_auth = ApiKeyAuth(scope="ingest")
read_auth = [ApiKeyAuth(), SessionMember()]

