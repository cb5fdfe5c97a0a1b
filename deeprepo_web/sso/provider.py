"""The OpenID provider the operator named: on or off, and its discovery document (kept an hour)."""

from __future__ import annotations

import time
from typing import Any

import httpx
from django.conf import settings

_TTL_SECONDS = 3600.0
_cache: dict[str, tuple[float, dict[str, Any]]] = {}


class ProviderUnavailable(Exception):
    """The provider did not answer with a usable discovery document."""


def sso_enabled() -> bool:
    return bool(settings.DEEPREPO_OIDC_ISSUER)


def provider_metadata() -> dict[str, Any]:
    issuer = settings.DEEPREPO_OIDC_ISSUER
    cached = _cache.get(issuer)
    now = time.monotonic()
    if cached is not None and now - cached[0] < _TTL_SECONDS:
        return cached[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        res = httpx.get(url, timeout=settings.OIDC_TIMEOUT)
        res.raise_for_status()
        meta = res.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    if not isinstance(meta, dict) or str(meta.get("issuer", "")).rstrip("/") != issuer:
        raise ProviderUnavailable(f"{url} names another issuer than DEEPREPO_OIDC_ISSUER={issuer}")
    missing = [k for k in ("authorization_endpoint", "token_endpoint", "jwks_uri") if not meta.get(k)]
    if missing:
        raise ProviderUnavailable(f"{url} lacks {', '.join(missing)}")
    _cache[issuer] = (now, meta)
    return meta
