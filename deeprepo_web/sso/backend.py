"""mozilla-django-oidc's backend, pointed at the discovered endpoints and finding users by subject."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from deeprepo_web.sso.provider import provider_metadata, sso_enabled
from deeprepo_web.sso.services import sso_login, sso_user_create


class SsoBackend(OIDCAuthenticationBackend):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library reads the endpoints here, but Django builds every backend for every password
        # login too: they are read in authenticate(), and only for a provider's callback.
        self.UserModel = get_user_model()

    def authenticate(self, request: Any, **kwargs: Any) -> Any:
        if request is None or not sso_enabled() or "nonce" not in kwargs:
            return None  # a password login (ModelBackend's), or SSO is off
        meta = provider_metadata()
        self.OIDC_OP_TOKEN_ENDPOINT = meta["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = meta.get("userinfo_endpoint")
        self.OIDC_OP_JWKS_ENDPOINT = meta["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        return super().authenticate(request, **kwargs)

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        if "nonce" in kwargs:  # the ID token: the library checks signature, expiry and nonce, not these
            audience = payload.get("aud")
            audiences = [audience] if isinstance(audience, str) else list(audience or [])
            if str(payload.get("iss", "")).rstrip("/") != settings.DEEPREPO_OIDC_ISSUER:
                raise SuspiciousOperation("the ID token was issued by another provider")
            if self.OIDC_RP_CLIENT_ID not in audiences:
                raise SuspiciousOperation("the ID token was issued to another client")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        # Some providers put groups only in the ID token: both are read, userinfo's answer wins.
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            claims.update(super().get_userinfo(access_token, id_token, payload))
        return claims

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        return bool(claims.get("sub"))

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        return self.UserModel.objects.filter(
            sso_identity__issuer=settings.DEEPREPO_OIDC_ISSUER, sso_identity__subject=str(claims["sub"]))

    def create_user(self, claims: dict[str, Any]) -> Any:
        return sso_login(user=sso_user_create(claims=claims), claims=claims)

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        return sso_login(user=user, claims=claims) if user.is_active else user

    # A deactivated user's session ends, as with password logins (the library's get_user skips that).
    get_user = ModelBackend.get_user
