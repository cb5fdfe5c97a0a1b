"""Where large bodies live: the filesystem under DATA_DIR by default (S3 when configured).

Blobs are content addressed (sha256), so the same image or tool output is stored once.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from django.conf import settings


def _root() -> Path:
    return Path(settings.DATA_DIR) / "objects"


def blob_key(sha: str) -> str:
    return f"blobs/{sha[:2]}/{sha}"


def blob_put(data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    path = _root() / blob_key(sha)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # atomic: a reader never sees half a blob
    return sha


def blob_get(sha: str) -> bytes:
    if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
        raise FileNotFoundError(sha)
    return (_root() / blob_key(sha)).read_bytes()
