"""Zip uploads opened safely: no paths out of the folder, bounded size and entry count."""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ZipLimits:
    max_total_bytes: int = 2 * 1024**3
    max_entries: int = 100_000


class ZipRejected(Exception):
    pass


class SafeZip:
    """A zip read with caps on entry count and total uncompressed bytes (declared AND actually read)."""

    def __init__(self, path: str | Path, limits: ZipLimits | None = None):
        self.limits = limits or ZipLimits()
        self.zf = zipfile.ZipFile(path)
        infos = self.zf.infolist()
        if len(infos) > self.limits.max_entries:
            raise ZipRejected(f"zip has {len(infos)} entries (limit {self.limits.max_entries})")
        declared = sum(i.file_size for i in infos)
        if declared > self.limits.max_total_bytes:
            raise ZipRejected(f"zip declares {declared} uncompressed bytes (limit {self.limits.max_total_bytes})")
        self.infos = {i.filename: i for i in infos}
        self.read_total = 0

    def names(self) -> list[str]:
        return list(self.infos)

    def chunks(self, name: str) -> Iterator[bytes]:
        info = self.infos[name]
        got = 0
        with self.zf.open(info) as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                got += len(chunk)
                self.read_total += len(chunk)
                # headers can lie: count what really comes out
                if got > info.file_size:
                    raise ZipRejected(f"{name}: more bytes than its declared size {info.file_size}")
                if self.read_total > self.limits.max_total_bytes:
                    raise ZipRejected(f"zip expands past {self.limits.max_total_bytes} bytes")
                yield chunk

    def read(self, name: str) -> bytes:
        return b"".join(self.chunks(name))

    def extract_all(self, dest: Path) -> None:
        root = dest.resolve()
        for name, info in self.infos.items():
            if info.is_dir():
                continue
            target = (root / name).resolve()
            if not str(target).startswith(str(root) + os.sep):
                raise ZipRejected(f"unsafe path in zip: {name!r}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                for chunk in self.chunks(name):
                    out.write(chunk)

    def close(self) -> None:
        self.zf.close()


def rmtree_quiet(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
