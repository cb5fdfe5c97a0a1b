"""A request limit per API key: writes (ingest) and reads each get DEEPREPO_RATE_*_PER_WINDOW requests
per DEEPREPO_RATE_WINDOW_SECONDS; past that the answer is 429 with Retry-After (the seconds until
the window turns). The client, and the W&B and MLflow SDKs, wait and send the same request again.

Counted in Redis (one INCR per request, shared by every web process) before any view runs, for
every endpoint that takes a key: the API, OTLP and the W&B / MLflow endpoints. A key is counted by
a hash of its whole secret, so a made-up key cannot use up a real key's allowance. When Redis is
away the request goes through: a limit must not stop ingest.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)
READS = ("GET", "HEAD", "OPTIONS")
_clients: dict[str, Any] = {}


def key_secret(request: HttpRequest) -> str | None:
    """The drk_ key in `Bearer drk_…`, or in Basic auth's password or user (the W&B SDK sends `api:<key>`)."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer":
        return value if value.startswith("drk_") else None
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return next((v for v in (password, user) if v.startswith("drk_")), None)
    return None


def _redis() -> Any:
    url = settings.DEEPREPO_RATE_REDIS_URL
    if url not in _clients:
        import redis

        _clients[url] = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    return _clients[url]


def key_spend(secret: str, kind: str, now: float | None = None) -> float | None:
    """Count one request; None when within the limit, else the seconds to wait."""
    limit = settings.DEEPREPO_RATE_READ_PER_WINDOW if kind == "read" else settings.DEEPREPO_RATE_INGEST_PER_WINDOW
    window = max(1, settings.DEEPREPO_RATE_WINDOW_SECONDS)
    if limit <= 0 or not settings.DEEPREPO_RATE_REDIS_URL:
        return None
    now = time.time() if now is None else now
    slot = int(now // window)
    name = f"deeprepo:rate:{kind}:{hashlib.sha256(secret.encode()).hexdigest()[:32]}:{slot}"
    try:
        pipe = _redis().pipeline()
        pipe.incr(name)
        pipe.expire(name, window * 2)
        count = int(pipe.execute()[0])
    except Exception as exc:  # noqa: BLE001  (any Redis failure: let the request through, say so)
        log.warning("rate limit not applied, Redis is away: %s", exc)
        return None
    return None if count <= limit else (slot + 1) * window - now


class RateLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        secret = key_secret(request)
        if secret is not None:
            kind = "read" if request.method in READS else "ingest"
            wait = key_spend(secret, kind)
            if wait is not None:
                seconds = max(1, math.ceil(wait))
                res = JsonResponse({"error": f"too many {kind} requests for this API key: try again in "
                                             f"{seconds} s (limit DEEPREPO_RATE_{kind.upper()}_PER_WINDOW "
                                             f"per {settings.DEEPREPO_RATE_WINDOW_SECONDS} s)"}, status=429)
                res["Retry-After"] = str(seconds)
                return res
        return self.get_response(request)
