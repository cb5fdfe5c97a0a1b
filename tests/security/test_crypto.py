"""Secrets at rest (deeprepo_web.crypto, used by jobs' clusters and the judge's endpoint): what is
stored is not the secret, a changed key says so plainly, and secrets stored before today still read."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.fernet import Fernet

from deeprepo_web.crypto import SecretsUnreadable, decrypt_secrets, encrypt_secrets


def test_round_trip_and_nothing_readable_at_rest(settings):
    settings.SECRET_KEY = "a-secret-key-for-this-test"
    token = encrypt_secrets({"private_key": "-----BEGIN OPENSSH-----x", "token": "", "api_key": "sk-1"})
    assert "OPENSSH" not in token and "sk-1" not in token
    assert decrypt_secrets(token) == {"private_key": "-----BEGIN OPENSSH-----x", "api_key": "sk-1"}  # empties dropped
    assert encrypt_secrets({"token": ""}) == "" and decrypt_secrets("") == {}


def test_a_token_stored_by_earlier_releases_still_reads(settings):
    # Earlier releases derived the key from SECRET_KEY with this label (jobs/crypto.py); a stored
    # secret must survive the module's move and any rewording.
    settings.SECRET_KEY = "kept-from-an-earlier-release"
    digest = hashlib.sha256(b"deeprepo-cluster-secrets\x00" + settings.SECRET_KEY.encode()).digest()
    stored = Fernet(base64.urlsafe_b64encode(digest)).encrypt(json.dumps({"token": "t-1"}).encode()).decode()
    assert decrypt_secrets(stored) == {"token": "t-1"}


def test_a_changed_or_bad_key_is_named(settings):
    settings.SECRET_KEY = "first"
    token = encrypt_secrets({"token": "t"})
    settings.SECRET_KEY = "second"
    with pytest.raises(SecretsUnreadable, match="cannot be decrypted .*enter them again"):
        decrypt_secrets(token)
    settings.DEEPREPO_ENCRYPTION_KEY = "not-a-fernet-key"
    with pytest.raises(SecretsUnreadable, match="DEEPREPO_ENCRYPTION_KEY is not a Fernet key"):
        encrypt_secrets({"token": "t"})
    settings.DEEPREPO_ENCRYPTION_KEY = Fernet.generate_key().decode()
    assert decrypt_secrets(encrypt_secrets({"token": "t"})) == {"token": "t"}
