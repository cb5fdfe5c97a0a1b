"""Where large bodies live: the filesystem under DATA_DIR by default, S3 when DEEPREPO_S3_BUCKET is set.

Two kinds of objects:
- blobs: content addressed (sha256) under `blobs/ab/<sha>`, so the same image or tool output
  is stored once whatever run sent it;
- artifacts: `projects/<project id>/runs/<run id>/artifacts/<token>/<name>`, laid out by
  project and run so a run's objects can be listed and removed together.

Callers use the functions here (`blob_put`, `blob_get`, `blob_url`, `backend()`); nothing
outside this package imports boto3.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import signing
from django.urls import reverse

from deeprepo_web.storage.base import Backend, ObjectMissing, PartInfo, StorageError, StorageUnavailable
from deeprepo_web.storage.filesystem import FilesystemBackend

__all__ = [
    "Backend", "FilesystemBackend", "ObjectMissing", "PartInfo", "StorageError", "StorageUnavailable",
    "backend", "blob_get", "blob_key", "blob_put", "blob_url", "is_sha256", "sniff_content_type",
    "signed_token", "signed_payload", "artifact_prefix", "run_prefix",
]

_SHA = re.compile(r"^[0-9a-f]{64}$")


def is_sha256(value: str) -> bool:
    return bool(_SHA.match(value))


# ---------------------------------------------------------------- which store


@lru_cache(maxsize=8)
def _make(bucket: str, endpoint: str, public_endpoint: str, region: str, root: str) -> Backend:
    if bucket:
        from deeprepo_web.storage.s3 import S3Backend  # boto3 loads only when S3 is configured

        return S3Backend(bucket=bucket, endpoint_url=endpoint, region=region, public_endpoint_url=public_endpoint)
    return FilesystemBackend(Path(root))


def backend() -> Backend:
    """The configured store (re-read from settings, so tests can switch it)."""
    return _make(
        settings.DEEPREPO_S3_BUCKET,
        settings.DEEPREPO_S3_ENDPOINT_URL,
        getattr(settings, "DEEPREPO_S3_PUBLIC_ENDPOINT_URL", ""),
        settings.DEEPREPO_S3_REGION,
        str(Path(settings.DATA_DIR) / "objects"),
    )


# ---------------------------------------------------------------- keys


def blob_key(sha: str) -> str:
    return f"blobs/{sha[:2]}/{sha}"


def run_prefix(project_id: int, run_public_id: str) -> str:
    return f"projects/{project_id}/runs/{run_public_id}/"


def artifact_prefix(project_id: int, run_public_id: str) -> str:
    return run_prefix(project_id, run_public_id) + "artifacts/"


# ---------------------------------------------------------------- blobs


def sniff_content_type(data: bytes) -> str:
    """The type a browser may render inline: raster images by magic bytes, otherwise plain text."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 4090:  # not just a multi-byte character cut at the window's end
            return "application/octet-stream"
    return "text/plain; charset=utf-8"


def blob_put(data: bytes) -> str:
    """Store bytes once by content; returns their sha256."""
    sha = hashlib.sha256(data).hexdigest()
    store = backend()
    key = blob_key(sha)
    if not store.exists(key):
        store.put_bytes(key, data, content_type=sniff_content_type(data))
    return sha


def blob_get(sha: str) -> bytes:
    if not is_sha256(sha):
        raise FileNotFoundError(sha)
    try:
        return backend().get_bytes(blob_key(sha))
    except ObjectMissing as exc:
        raise FileNotFoundError(sha) from exc


def blob_delete(sha: str) -> None:
    if is_sha256(sha):
        backend().delete(blob_key(sha))


def blob_url(sha: str, ttl: int = 300, *, project_slug: str) -> str:
    """A short-lived URL of a blob: S3 presigned GET, or the web app's blob view with a signed expiry.

    Pages should prefer the web app's `blob` view (it checks membership and stays inside the CSP);
    this is for API consumers that fetch many images straight from the store.
    """
    store = backend()
    url = store.presign_get(blob_key(sha), ttl=ttl) if store.presigns else None
    if url:
        return url
    token = signed_token({"k": blob_key(sha), "p": project_slug}, salt=BLOB_SALT, ttl=ttl)
    return reverse("blob", args=[project_slug, sha]) + f"?t={token}"


# ---------------------------------------------------------------- signed URLs of the web app

BLOB_SALT = "deeprepo.storage.blob"
PUT_SALT = "deeprepo.storage.put"
GET_SALT = "deeprepo.storage.get"


def signed_token(payload: dict[str, Any], *, salt: str, ttl: int) -> str:
    """A URL-safe token holding payload, its signing time and its lifetime (the filesystem's presigning)."""
    return signing.TimestampSigner(salt=salt).sign_object({**payload, "ttl": int(ttl)}, compress=True)


def signed_payload(token: str, *, salt: str) -> dict[str, Any]:
    """The payload of a valid, unexpired token; raises signing.BadSignature (SignatureExpired) otherwise."""
    signer = signing.TimestampSigner(salt=salt)
    payload = signer.unsign_object(token)  # signature first: the ttl inside is then trustworthy
    if not isinstance(payload, dict) or not isinstance(payload.get("ttl"), int):
        raise signing.BadSignature("malformed token")
    signer.unsign_object(token, max_age=payload["ttl"])
    return payload
