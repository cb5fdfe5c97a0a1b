"""Users who sign in through the provider: created on first sign-in, their roles set at each one."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from deeprepo_web.audit.models import Action
from deeprepo_web.audit.services import audit_record
from deeprepo_web.sso.models import SsoIdentity
from deeprepo_web.sso.roles import sso_roles_sync

_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")


def _username_wanted(claims: dict[str, Any]) -> str:
    email = str(claims.get("email") or "")
    name = str(claims.get("preferred_username") or email.split("@")[0] or claims["sub"])
    return _NOT_IN_USERNAME.sub("-", name)[:140] or "sso-user"


def _username_free(wanted: str) -> str:
    # A local account with the same name stays its own account: the newcomer gets a suffix.
    name, n = wanted, 1
    while User.objects.filter(username__iexact=name).exists():
        n += 1
        name = f"{wanted}-{n}"
    return name


@transaction.atomic
def sso_user_create(*, claims: dict[str, Any]) -> User:
    """A new account with no password (it signs in only through the provider), tied to its subject."""
    user = User.objects.create_user(_username_free(_username_wanted(claims)), email=str(claims.get("email") or ""))
    SsoIdentity.objects.create(user=user, issuer=settings.DEEPREPO_OIDC_ISSUER, subject=str(claims["sub"]))
    return user


@transaction.atomic
def sso_login(*, user: User, claims: dict[str, Any]) -> User:
    """At each sign-in: the e-mail follows the provider's, the roles its claims; each project granted
    records the sign-in in its audit log."""
    email = str(claims.get("email") or "")
    if email and email != user.email:
        user.email = email
        user.save(update_fields=["email"])
    actor = f"sso ({settings.DEEPREPO_OIDC_PROVIDER_NAME})"
    granted = sso_roles_sync(user=user, claims=claims, actor=actor)
    for project, role in granted.items():
        audit_record(project=project, action=Action.SSO_LOGIN, target=user.username, actor=user.username,
                     role=role, provider=settings.DEEPREPO_OIDC_PROVIDER_NAME)
    return user
