"""Objects as files under DATA_DIR/objects: the single-machine default."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from deeprepo_web.storage.base import Backend, ObjectMissing, StorageError


class FilesystemBackend(Backend):
    name = "filesystem"

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        # Keys come from keys.py, but a second guard costs nothing: never leave the root.
        if not key or key.startswith("/") or "\x00" in key or any(p in ("", ".", "..") for p in key.split("/")):
            raise StorageError(f"invalid storage key {key[:80]!r}")
        return self.root / key

    def _tmp(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.with_name(f".{path.name}.tmp{os.getpid()}.{id(path)}")

    def put_bytes(self, key: str, data: bytes, *, content_type: str = "application/octet-stream") -> None:
        path = self.path(key)
        tmp = self._tmp(path)
        tmp.write_bytes(data)
        os.replace(tmp, path)  # atomic: a reader never sees half an object

    def put_file(self, key: str, fh: BinaryIO, *, content_type: str = "application/octet-stream") -> None:
        path = self.path(key)
        tmp = self._tmp(path)
        try:
            with open(tmp, "wb") as out:
                shutil.copyfileobj(fh, out, 8 * 1024 * 1024)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)

    def move_in(self, key: str, src: Path) -> None:
        """Adopt a finished temp file (same filesystem) as the object under key."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, path)

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectMissing(key) from exc

    def iter_chunks(self, key: str, chunk_size: int = 8 * 1024 * 1024) -> Iterator[bytes]:
        try:
            fh = open(self.path(key), "rb")  # noqa: SIM115 - closed by the generator
        except FileNotFoundError as exc:
            raise ObjectMissing(key) from exc
        with fh:
            while chunk := fh.read(chunk_size):
                yield chunk

    def size(self, key: str) -> int:
        try:
            return self.path(key).stat().st_size
        except FileNotFoundError as exc:
            raise ObjectMissing(key) from exc

    def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def keys(self, prefix: str = "") -> Iterator[str]:
        for path in self.root.rglob("*"):
            if path.is_file() and not path.name.startswith("."):  # ".name.tmp…": a write under way
                key = path.relative_to(self.root).as_posix()
                if key.startswith(prefix):
                    yield key

    def delete_prefix(self, prefix: str) -> int:
        if not prefix.endswith("/"):
            raise StorageError("delete_prefix needs a prefix ending with '/'")
        folder = self.path(prefix.rstrip("/"))
        if not folder.is_dir():
            return 0
        count = sum(1 for p in folder.rglob("*") if p.is_file())
        shutil.rmtree(folder, ignore_errors=True)
        return count
