"""Inline images out of rollout records, into the blob store, before they are stored.

A record may carry base64 images anywhere: a data URL in a message's text, an OpenAI-style
`image_url` part (also `input_image`, Anthropic's base64 `source`), nested in lists of messages or
tool arguments. Each one is written to the blob store and replaced by `blob:<sha>` (a whole-string
URL) or a `![alt](blob:<sha>)` marker (inside text), so rows and pages stay small and the page
shows a thumbnail from the blob view. A transform of the records: the rest of ingest is unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import connection

from deeprepo_web.runs.ingest.blobs import blob_refs_write, image_blob, images_extract
from deeprepo_web.runs.models import Run

_MARK = "data:image/"
_WHOLE = re.compile(r"\s*data:image/(?P<fmt>[a-zA-Z0-9.+-]{1,20});base64,(?P<b64>[A-Za-z0-9+/=\s]+)")
_IMAGE_PARTS = ("image_url", "input_image", "image")


def _put(b64: str, kind: str, refs: set[str], found: list[dict[str, Any]]) -> str | None:
    image = image_blob(b64, kind, refs)
    if image is None:
        return None  # not base64 after all: left as written
    found.append(image)
    return str(image["sha"])


def _string(text: str, refs: set[str], found: list[dict[str, Any]]) -> str:
    if _MARK not in text:
        return text
    whole = _WHOLE.fullmatch(text)
    if whole:
        sha = _put(whole.group("b64"), whole.group("fmt").lower(), refs, found)
        return f"blob:{sha}" if sha else text
    out, images = images_extract(text, refs)
    found.extend(images)
    return out


def _anthropic_source(part: dict[str, Any], refs: set[str], found: list[dict[str, Any]]) -> dict[str, Any] | None:
    """{"type": "image", "source": {"type": "base64", "data": ...}} -> an image part with a blob URL."""
    src = part.get("source")
    if not (isinstance(src, dict) and src.get("type") == "base64" and isinstance(src.get("data"), str)):
        return None
    kind = str(src.get("media_type") or "image/png").removeprefix("image/")
    sha = _put(src["data"], kind, refs, found)
    if sha is None:
        return None
    return {**{k: v for k, v in part.items() if k != "source"}, "type": "image_url", "image_url": {"url": f"blob:{sha}"}}


def _walk(value: Any, refs: set[str], found: list[dict[str, Any]]) -> Any:
    """`value` with its images moved out; the very same object when it had none (no copies)."""
    if isinstance(value, str):
        return _string(value, refs, found)
    if isinstance(value, list):
        items = [_walk(v, refs, found) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        if value.get("type") in _IMAGE_PARTS:
            moved = _anthropic_source(value, refs, found)
            if moved is not None:
                return moved
        changed = False
        out = {}
        for k, v in value.items():
            new = _walk(v, refs, found)
            changed |= new is not v
            out[k] = new
        return out if changed else value
    return value


def _turn(turn: Any, refs: set[str]) -> Any:
    """A turn's images also listed in its metadata["images"] (sha, type, size), as ingest keeps them."""
    if not isinstance(turn, dict):
        return _walk(turn, refs, [])
    found: list[dict[str, Any]] = []
    out = _walk(turn, refs, found)
    if found:
        meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
        out = {**out, "metadata": {**meta, "images": [*(meta.get("images") or []), *found]}}
    return out


def _record(record: dict[str, Any], refs: set[str]) -> dict[str, Any]:
    out = {k: ([_turn(t, refs) for t in v] if k == "turns" and isinstance(v, list) else _walk(v, refs, []))
           for k, v in record.items()}
    return out


def _has_image(value: Any) -> bool:
    # A loop over a stack, not recursion: this scan runs on every imported record (~30 ms for a
    # thousand 10-turn rollouts), the rebuilding walk only on the few records that hold an image.
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is str:
            if _MARK in v:
                return True
        elif type(v) is dict:
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
    return False


def images_offload(*, run: Run, rollouts: list[dict[str, Any]], body: bytes | None = None) -> list[dict[str, Any]]:
    """The records with every inline base64 image in the blob store (referenced by `run`).

    `body`, the request the records were read from: when it holds no data URL (the usual case)
    nothing is scanned at all.
    """
    if body is not None and _MARK.encode() not in body:
        return rollouts
    refs: set[str] = set()
    out = [_record(r, refs) if isinstance(r, dict) and _has_image(r) else r for r in rollouts]
    if refs:
        with connection.cursor() as cur:
            blob_refs_write(cur, run, refs)
    return out
