"""Sign-in through the provider (mozilla-django-oidc's views with discovered endpoints), and the
logout that also ends the provider's session (RP-initiated logout at its end_session_endpoint)."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from deeprepo_web.sso.provider import ProviderUnavailable, provider_metadata, sso_enabled

logger = logging.getLogger(__name__)


class SsoStartView(OIDCAuthenticationRequestView):
    """Redirects to the provider with state, nonce and a PKCE challenge kept in the session."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the library reads fixed endpoints here; ours are discovered in get()

    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_metadata()["authorization_endpoint"]
        except ProviderUnavailable as exc:
            logger.warning("single sign-on: %s", exc)
            return HttpResponseRedirect(f"{resolve_url(settings.LOGIN_URL)}?sso=unavailable")
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    def get(self, request: HttpRequest) -> HttpResponse:
        if not sso_enabled():
            raise Http404
        try:
            return super().get(request)
        except (ProviderUnavailable, requests.RequestException, SuspiciousOperation) as exc:
            # A refused code exchange, a bad token, a state this session never sent: no session.
            logger.warning("single sign-on failed: %s", exc)
            return self.login_failure()


def provider_logout_url(request: HttpRequest) -> str:
    """Where logout sends the browser: the provider's end_session_endpoint for a session that signed
    in there (back to the login page afterwards), else straight to the login page."""
    local = resolve_url(settings.LOGOUT_REDIRECT_URL)
    id_token = request.session.get("oidc_id_token")
    if not sso_enabled() or not id_token:
        return local
    try:
        end_session = provider_metadata().get("end_session_endpoint")
    except ProviderUnavailable as exc:
        logger.warning("single sign-on logout: %s", exc)
        return local
    if not end_session:
        return local
    query = urlencode({"id_token_hint": id_token, "client_id": settings.OIDC_RP_CLIENT_ID,
                       "post_logout_redirect_uri": request.build_absolute_uri(local)})
    return f"{end_session}?{query}"
