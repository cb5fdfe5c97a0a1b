"""Opens the replica to a page request's reads, except for a user who wrote a moment ago.

A request that changes something (any method but GET/HEAD/OPTIONS) sets a cookie with the time;
for DEEPREPO_READ_YOUR_WRITES_SECONDS after it, that browser's reads stay on the primary, so a user
sees their own change at once even while the replica catches up."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from deeprepo_web.replica.health import replica_state
from deeprepo_web.replica.router import may_read_replica

COOKIE = "deeprepo_wrote"
SAFE = ("GET", "HEAD", "OPTIONS")


def _wrote_recently(request: HttpRequest) -> bool:
    try:
        wrote = float(request.COOKIES.get(COOKIE, ""))
    except ValueError:
        return False
    return 0 <= time.time() - wrote < settings.DEEPREPO_READ_YOUR_WRITES_SECONDS


class ReplicaReadsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        replica_ok = request.method in SAFE and not _wrote_recently(request)
        response = self._respond(request, replica_ok)
        if (replica_ok and response.status_code == 500 and replica_state().configured
                and not replica_state(fresh=True).serves_reads):
            # The replica died since its last probe (up to DEEPREPO_REPLICA_CHECK_SECONDS ago) and this
            # read failed on it: a safe request is answered again from the primary instead of a 500.
            response = self._respond(request, False)
        if request.method not in SAFE:
            response.set_cookie(COOKIE, f"{time.time():.3f}", max_age=settings.DEEPREPO_READ_YOUR_WRITES_SECONDS,
                                httponly=True, samesite="Lax", secure=settings.SESSION_COOKIE_SECURE)
        return response

    def _respond(self, request: HttpRequest, replica_ok: bool) -> HttpResponse:
        token = may_read_replica.set(replica_ok)
        try:
            return self.get_response(request)
        finally:
            may_read_replica.reset(token)
