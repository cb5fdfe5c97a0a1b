"""The interface every object store implements, and the errors callers see.

Keys are relative, '/'-separated and built by this package only (see keys.py), never from raw
user input. Presigning is optional: a backend without it returns None and the caller falls
back to the web process's own signed URLs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO


class StorageError(Exception):
    """A store operation failed for a reason the user can act on; the message is one line."""


class StorageUnavailable(StorageError):
    """The store did not answer (down, timeout, wrong endpoint). Transient: retry later."""


class ObjectMissing(StorageError):
    """No object under that key."""


@dataclass(frozen=True)
class PartInfo:
    number: int
    size: int
    etag: str


class Backend:
    name = "base"
    # True when the store itself can accept uploads through presigned URLs (S3).
    presigns = False

    def put_bytes(self, key: str, data: bytes, *, content_type: str = "application/octet-stream") -> None:
        raise NotImplementedError

    def put_file(self, key: str, fh: BinaryIO, *, content_type: str = "application/octet-stream") -> None:
        raise NotImplementedError

    def get_bytes(self, key: str) -> bytes:
        raise NotImplementedError

    def iter_chunks(self, key: str, chunk_size: int = 8 * 1024 * 1024) -> Iterator[bytes]:
        raise NotImplementedError

    def size(self, key: str) -> int:
        """Bytes stored under key; ObjectMissing when absent."""
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        try:
            self.size(key)
        except ObjectMissing:
            return False
        return True

    def delete(self, key: str) -> None:
        """Remove one object; a missing one is not an error."""
        raise NotImplementedError

    def delete_prefix(self, prefix: str) -> int:
        """Remove every object under prefix (which must end with '/'); returns how many."""
        raise NotImplementedError

    def keys(self, prefix: str = "") -> Iterator[str]:
        """Every stored object's key under prefix, in no promised order (backups walk the store)."""
        raise NotImplementedError

    # ------------------------------------------------------------ presigned (S3 only)

    def presign_get(self, key: str, *, ttl: int, filename: str | None = None) -> str | None:
        return None

    def presign_put(self, key: str, *, ttl: int, size: int) -> str | None:
        return None

    def multipart_create(self, key: str) -> str:
        raise StorageError(f"the {self.name} store has no multipart uploads")

    def multipart_part_url(self, key: str, upload_id: str, number: int, *, ttl: int) -> str:
        raise StorageError(f"the {self.name} store has no multipart uploads")

    def multipart_parts(self, key: str, upload_id: str) -> list[PartInfo]:
        raise StorageError(f"the {self.name} store has no multipart uploads")

    def multipart_complete(self, key: str, upload_id: str, parts: list[PartInfo]) -> None:
        raise StorageError(f"the {self.name} store has no multipart uploads")

    def multipart_abort(self, key: str, upload_id: str) -> None:
        raise StorageError(f"the {self.name} store has no multipart uploads")
