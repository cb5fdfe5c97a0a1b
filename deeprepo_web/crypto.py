"""Secrets kept in the database (a cluster's SSH key and tokens, the judge endpoint's API key),
encrypted at rest with Fernet. A library: jobs and judge store their secrets through it.

The key is DEEPREPO_ENCRYPTION_KEY when set (a Fernet key, `Fernet.generate_key()`), else one
derived from SECRET_KEY, so a stolen database dump alone never yields a private key.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class SecretsUnreadable(Exception):
    pass


@lru_cache(maxsize=4)
def _fernet(configured: str, secret_key: str) -> Fernet:
    if configured:
        try:
            return Fernet(configured.encode())
        except ValueError as e:
            raise SecretsUnreadable(
                "DEEPREPO_ENCRYPTION_KEY is not a Fernet key (32 url-safe base64 bytes)"
            ) from e
    # A domain-separated hash of SECRET_KEY: rotating SECRET_KEY makes stored secrets unreadable,
    # which the cluster page reports ("re-enter the key") rather than failing obscurely. The label
    # says "cluster" for history: changing it would make every stored secret unreadable.
    digest = hashlib.sha256(b"deeprepo-cluster-secrets\x00" + secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def fernet() -> Fernet:
    return _fernet(getattr(settings, "DEEPREPO_ENCRYPTION_KEY", ""), settings.SECRET_KEY)


def encrypt_secrets(values: dict[str, str]) -> str:
    clean = {k: v for k, v in values.items() if v}
    if not clean:
        return ""
    return fernet().encrypt(json.dumps(clean).encode()).decode()


def decrypt_secrets(token: str) -> dict[str, str]:
    if not token:
        return {}
    try:
        data = json.loads(fernet().decrypt(token.encode()))
    except InvalidToken as e:
        raise SecretsUnreadable(
            "the stored secrets cannot be decrypted (SECRET_KEY or DEEPREPO_ENCRYPTION_KEY "
            "changed?); enter them again"
        ) from e
    return {str(k): str(v) for k, v in data.items()}
