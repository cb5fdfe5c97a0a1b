"""Big bodies and inline images of turns and tool calls go to the blob store; rows keep a preview."""

from __future__ import annotations

import base64
import binascii
import logging
import re
from typing import Any

from deeprepo_web import storage
from deeprepo_web.runs.models import BlobRef, Run
from deeprepo_web.storage import blob_put

log = logging.getLogger(__name__)

# What a row keeps of a body that went to the blob store.
PREVIEW_CHARS = 16 * 1024


def _offload(text: str | None, refs: set[str], limit: int) -> tuple[str, str, int]:
    """(kept text, blob sha or '', full size in bytes). Bodies past `limit` bytes go to the store."""
    if not text:
        return "", "", 0
    if text.isascii() and len(text) <= limit:
        return text, "", len(text)  # most bodies: the size without encoding a copy
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, "", len(data)
    sha = blob_put(data)
    refs.add(sha)
    return text[:PREVIEW_CHARS], sha, len(data)


# An inline image, bare or as a Markdown image: `![alt](data:image/png;base64,....)`.
_DATA_IMAGE = re.compile(
    r"(?:!\[(?P<alt>[^\]\n]{0,200})\]\()?data:image/(?P<fmt>png|jpeg|jpg|gif|webp);base64,"
    r"(?P<b64>(?:[A-Za-z0-9+/]|\r?\n){16,}={0,2})(?P<close>\))?"
)
# Below this, a data URI costs less in the row than a round trip to the store.
_MIN_IMAGE_BYTES = 1024


def image_blob(b64: str, fmt: str, refs: set[str]) -> dict[str, Any] | None:
    """Base64 image data into the blob store (its sha added to `refs`): {sha, type, size}, or None
    when it is not base64 after all."""
    try:
        raw = base64.b64decode("".join(b64.split()), validate=True)
    except (binascii.Error, ValueError):
        return None
    sha = blob_put(raw)
    refs.add(sha)
    return {"sha": sha, "type": f"image/{'jpeg' if fmt == 'jpg' else fmt}", "size": len(raw)}


def images_extract(text: str, refs: set[str]) -> tuple[str, list[dict[str, Any]]]:
    """Move inline base64 images to the blob store; the text keeps `![alt](blob:<sha>)` markers."""
    if "data:image/" not in text:  # the common case costs one substring search
        return text, []
    images: list[dict[str, Any]] = []

    def swap(m: re.Match[str]) -> str:
        b64, alt, close = m.group("b64"), m.group("alt"), m.group("close")
        if len(b64) < _MIN_IMAGE_BYTES * 4 // 3 or (alt is not None and not close):
            return m.group(0)  # tiny, or an unterminated Markdown image: left as written
        image = image_blob(b64, m.group("fmt"), refs)
        if image is None:
            return m.group(0)  # not base64 after all: leave the text as it was
        images.append(image)
        sha = image["sha"]
        if alt is not None:
            return f"![{alt}](blob:{sha})"
        # A bare data URI: its ')' (if any) belonged to the surrounding text.
        return f"![image](blob:{sha})" + (close or "")

    return _DATA_IMAGE.sub(swap, text), images


def body_split(text: str | None, refs: set[str], limit: int) -> tuple[str, str, int, list[dict[str, Any]]]:
    """Images out first, then the size threshold on what is left."""
    if type(text) is str and len(text) <= limit and text.isascii() and "data:image/" not in text:
        # Most bodies are ASCII within the limit with no inline image, kept as they are: checked in C
        # without the calls below (ingest runs this for every turn and tool call of a batch).
        return text, "", len(text), []
    images: list[dict[str, Any]] = []
    if text:
        text, images = images_extract(text, refs)
    kept, blob, size = _offload(text, refs, limit)
    return kept, blob, size, images


def blob_refs_write(cur: Any, run: Run, refs: set[str]) -> None:
    if refs:
        cur.execute(
            "INSERT INTO runs_blobref (sha, run_id) SELECT s, %s FROM unnest(%s::text[]) AS s "
            "ON CONFLICT DO NOTHING",
            [run.pk, sorted(refs)],
        )

def blobs_collect(shas: list[str]) -> int:
    """Remove from the store the blobs no run refers to any more; call it after the transaction that
    dropped the references committed (the sweep's clearing, a run's deletion)."""
    used = set(BlobRef.objects.filter(sha__in=shas).values_list("sha", flat=True))
    gone = 0
    for sha in set(shas) - used:
        try:
            storage.backend().delete(storage.blob_key(sha))
            gone += 1
        except storage.StorageError as exc:  # an orphan wastes space but harms nobody
            log.warning("blob %s kept: %s", sha, exc)
    return gone
