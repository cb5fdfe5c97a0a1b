"""Media a W&B run logged outside tables (`wandb.log({"sample": wandb.Image(...)})`, wandb.Html,
Audio, Video, 3D objects, ...): the history row holds `{"_type": "image-file", "path":
"media/images/...", "caption": ...}` and the bytes sit under the run's `files/`. Each file becomes a
MediaRecord (key, step, kind, its bytes); the server keeps them as run artifacts, images also as
blobs for thumbnails. Table files are not media here: wandb_tables reads them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MediaEvent, MediaRecord, Problem

MAX_FILE = 64 << 20  # a bigger "media" file is likely a mistake: reported, not read
BATCH_BYTES = 16 << 20  # bytes of media held in one event
_KINDS = {"image-file": "image", "html-file": "html", "audio-file": "audio", "video-file": "video"}
_TABLES = ("table-file", "partitioned-table", "joined-table")
ARTIFACT_KINDS = frozenset({"image", "html", "audio", "video"})  # anything else is kind "media"


def media_refs(value: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, path under files/, caption) of every media file a history value points at."""
    kind = value.get("_type")
    if not isinstance(kind, str) or kind in _TABLES:
        return []
    caption = str(value.get("caption") or "")
    if kind.endswith("-file") and isinstance(value.get("path"), str):
        return [(_KINDS.get(kind, "file"), value["path"], caption)]
    # A list of images (`wandb.log({"k": [wandb.Image(...), ...]})`): one entry, many files.
    names = value.get("filenames")
    if kind == "images/separated" and isinstance(names, list):
        raw = value.get("captions")
        captions: list[Any] = raw if isinstance(raw, list) else []
        return [("image", n, str(captions[i]) if i < len(captions) else "")
                for i, n in enumerate(names) if isinstance(n, str)]
    return []


def artifact_name(record: MediaRecord) -> str:
    """`media/<key>/step-<step>/<file name>`: what the file is called as a run artifact (the server
    and `deeprepo import` alike); key segments an artifact name cannot hold become '_'."""
    parts = [p if p not in ("", ".", "..") else "_" for p in str(record["key"]).replace("\\", "/").split("/")]
    return f"media/{'/'.join(parts)}/step-{int(record['step'])}/{Path(record['name']).name}"


def artifact_kind(record: MediaRecord) -> str:
    return record["kind"] if record["kind"] in ARTIFACT_KINDS else "media"


def media_records(log: Path, found: Iterable[tuple[str, int, str, str, str]]) -> Iterator[MediaRecord | Problem]:
    """found: (key, step, kind, path under files/, caption). A file missing or outside the run is a Problem."""
    files = (log.parent / "files").resolve()
    for key, step, kind, rel, caption in found:
        path = (files / rel).resolve()
        where = f"history step {step}: {kind} {key!r} points at {rel}"
        if files not in path.parents:
            yield Problem(str(log), None, f"{where}, which is outside the run folder; skipped")
            continue
        try:
            size = path.stat().st_size
            if size > MAX_FILE:
                yield Problem(str(log), None, f"{where}: {size} bytes is over the {MAX_FILE >> 20} MB limit; skipped")
                continue
            data = path.read_bytes()
        except OSError:
            yield Problem(str(log), None, f"{where}, which is not in the run folder; skipped")
            continue
        record: MediaRecord = {"key": key, "step": step, "kind": kind, "name": rel, "data": data}
        if caption:
            record["caption"] = caption
        yield record


def batch_media(ref: str, items: Iterable[MediaRecord | Problem]) -> Iterator[Event]:
    """MediaEvents of at most BATCH_BYTES (or one bigger file); Problems pass through in order."""
    batch: list[MediaRecord] = []
    held = 0
    for item in items:
        if isinstance(item, Problem):
            yield item
            continue
        if batch and held + len(item["data"]) > BATCH_BYTES:
            yield MediaEvent(ref, batch)
            batch, held = [], 0
        batch.append(item)
        held += len(item["data"])
    if batch:
        yield MediaEvent(ref, batch)
