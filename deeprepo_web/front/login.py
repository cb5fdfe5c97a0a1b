"""Login with a per-(address, username) failure limit: guessing passwords gets slow, users are not locked out."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def _bucket(request: HttpRequest) -> str:
    address = request.META.get("REMOTE_ADDR", "")
    username = request.POST.get("username", "").strip().lower()
    digest = hashlib.sha256(f"{address}|{username}".encode()).hexdigest()[:32]
    return f"login-fail:{digest}"


class RateLimitedLoginView(auth_views.LoginView):
    template_name = "front/login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        if settings.DEEPREPO_OIDC_ISSUER:  # "Sign in with <provider>" beside the password form
            context["sso"] = settings.DEEPREPO_OIDC_PROVIDER_NAME
            context["sso_failed"] = self.request.GET.get("sso") == "failed"
            context["sso_unavailable"] = self.request.GET.get("sso") == "unavailable"
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        key = _bucket(request)
        if cache.get(key, 0) >= settings.LOGIN_MAX_FAILURES:
            minutes = settings.LOGIN_LOCKOUT_SECONDS // 60
            return render(request, "front/login.html", {"locked": minutes}, status=429)
        response = super().post(request, *args, **kwargs)
        if response.status_code != 302:  # the form came back: wrong credentials
            try:
                cache.incr(key)
            except ValueError:
                cache.set(key, 1, settings.LOGIN_LOCKOUT_SECONDS)
        else:
            cache.delete(key)
        return response
