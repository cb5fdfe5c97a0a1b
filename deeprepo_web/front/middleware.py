from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from deeprepo_web.front.paging import BadCursor

# No inline script anywhere: data reaches scripts through json_script; styles may be inline for bars.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


@lru_cache(maxsize=4)
def csp_for(issuer: str) -> str:
    """With single sign-on, the logout form's redirect goes on to the provider: browsers check a form's
    redirects against form-action too."""
    if not issuer:
        return CSP
    parts = urlsplit(issuer)
    return f"{CSP} {parts.scheme}://{parts.netloc}"


class ContentSecurityPolicyMiddleware:
    """Sets the CSP header, and refuses oversized API bodies with 413 before anything reads them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if limit is not None and length > limit:
                return JsonResponse(
                    {"error": f"body of {length} bytes is over the limit of {limit} bytes; send smaller batches"},
                    status=413,
                )
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", csp_for(settings.DEEPREPO_OIDC_ISSUER))
        return response


class BadCursorMiddleware:
    """A page given a cursor its list did not make answers 400 with the reason, not an error page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not isinstance(exc, BadCursor):
            return None
        return HttpResponse(f"{exc}. Open the list from its first page (a link without cursor=).\n",
                            status=400, content_type="text/plain; charset=utf-8")
