"""Uploaded files land under DATA_DIR/uploads/<content hash>/, named so that a re-upload finds the same runs."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings


class UploadTooLarge(ValueError):
    pass


def _uploads_root() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def upload_store(files: list[tuple[str, Iterable[bytes]]]) -> tuple[Path, int]:
    """Save uploaded files under DATA_DIR/uploads/<content hash>/ and return (what to import, bytes).

    The folder is named by the content: uploading the same files again gives the same paths, so
    parsers that name runs after their folder find the same runs (and nothing is doubled).
    """
    root = _uploads_root()
    tmp = root / f".incoming-{time.time_ns()}"
    tmp.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    total = 0
    names: list[str] = []
    try:
        for raw_name, chunks in files:
            name = _safe_name(raw_name, names)
            names.append(name)
            digest.update(name.encode() + b"\x00")
            with open(tmp / name, "wb") as out:
                for chunk in chunks:
                    digest.update(chunk)
                    total += len(chunk)
                    if total > settings.DEEPREPO_IMPORT_MAX_UPLOAD_BYTES:
                        raise UploadTooLarge(
                            f"upload is larger than {settings.DEEPREPO_IMPORT_MAX_UPLOAD_BYTES} bytes"
                        )
                    out.write(chunk)
        hexdigest = digest.hexdigest()
        # Several files are one folder; parsers name runs after their folder, so it gets a short id
        # the way vf-eval names its output folders (<env>--<model>/<8 hex>).
        final = root / hexdigest[:24]
        inner = final if len(names) == 1 else final / hexdigest[:8]
        if final.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            inner.parent.mkdir(parents=True, exist_ok=True)
            tmp.rename(inner)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    target = inner / names[0] if len(names) == 1 else inner
    return target, total



def _safe_name(raw: str, taken: list[str]) -> str:
    # Browsers send a base name; never trust it to stay inside the folder.
    name = Path(raw.replace("\\", "/")).name.strip() or "upload"
    name = name.lstrip(".") or "upload"
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{n}-{base}"
    return name[:200]

