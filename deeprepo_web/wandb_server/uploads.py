"""Run files the SDK uploads after CreateRunFiles: a signed URL per file, then a PUT of its bytes.

The SDK sends no API key with the PUT, so the URL carries its own signature and expiry. What a file
becomes: a W&B table whose columns look like rollouts → rollouts (a cumulative table logged again
adds only its new rows); media (images, HTML, audio, video) → run artifacts `media/<key>/step-<n>/…`
(importers/media.py, the same as a `.wandb` import); anything else (config.yaml, output.log, files
given to wandb.save, tables that are not rollouts) → the run artifact `wandb/<path>`.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from deeprepo_client.formats._values import short_hash
from deeprepo_client.formats.wandb_tables import rollout_columns, rows_rollouts
from deeprepo_client.records import MediaRecord, Problem
from deeprepo_web.artifacts.services import ArtifactError, artifact_name_check, artifact_store_file
from deeprepo_web.importers.media import media_store
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Run
from deeprepo_web.storage import signed_payload, signed_token

SALT = "deeprepo.wandb.upload"
TTL = 24 * 3600  # the SDK may hold a URL while it retries a slow upload
MAX_TABLE = 256 << 20  # bytes of one table file read into memory
# media/<kind folder>/<key>_<step>_<hash>.<ext>, the name the SDK gives a logged media file
_MEDIA = re.compile(r"^media/(?P<folder>[^/]+)/(?P<key>.+)_(?P<step>\d+)_(?P<hash>[0-9a-f]+)(?P<ext>(?:\.[\w-]+)+)$")
_KINDS = {"images": "image", "html": "html", "audio": "audio", "videos": "video"}


class UploadError(ValueError):
    pass


def upload_url(request: HttpRequest, *, run: Run, name: str) -> str:
    token = signed_token({"r": run.pk, "f": name}, salt=SALT, ttl=TTL)
    return request.build_absolute_uri(reverse("wandb_upload", args=[token]))


def upload_target(token: str) -> tuple[Run, str]:
    """The run and file name a signed URL is for; raises signing errors for a bad or old token."""
    payload = signed_payload(token, salt=SALT)
    run = Run.objects.select_related("project").get(pk=payload["r"])
    return run, str(payload["f"])


def _content_uid(run: Run, key: str, record: dict[str, Any]) -> str:
    """A row's uid from what it holds, not from the file or step it came in: verl logs the whole
    table again each time, and the rows it already sent must land on the rollouts already stored."""
    return "wandb-" + short_hash(run.public_id, key, record.get("example_key"), record.get("sample_index"),
                                 record.get("final_answer"), record.get("reward"), record.get("step"), n=32)


def table_store(run: Run, key: str, step: int, path: Path) -> int | None:
    """A table's rows as rollouts when its columns look like rollouts; returns how many were new, or
    None for a table that is not rollouts (kept as a file then)."""
    if path.stat().st_size > MAX_TABLE:
        raise UploadError(f"table {key!r}: over {MAX_TABLE >> 20} MB, not read")
    try:
        doc = json.loads(path.read_bytes())
    except ValueError as exc:
        raise UploadError(f"table {key!r}: not JSON ({exc})") from exc
    columns, data = (doc.get("columns"), doc.get("data")) if isinstance(doc, dict) else (None, None)
    if not isinstance(columns, list) or not isinstance(data, list):
        raise UploadError(f"table {key!r}: needs a 'columns' list and a 'data' list")
    if rollout_columns(columns) is None:
        return None
    records = [r for r in rows_rollouts(columns, data, key, key, step, run.public_id, Path("/nonexistent"))
               if not isinstance(r, Problem)]
    rollouts: list[dict[str, Any]] = []
    for record in records:
        row = dict(record)
        row["uid"] = _content_uid(run, key, row)
        rollouts.append(row)
    return rollouts_ingest(run=run, rollouts=rollouts)


def upload_store(*, run: Run, name: str, path: Path) -> str:
    """Keep one uploaded file; returns what it became."""
    found = _MEDIA.match(name)
    if found and found["folder"] == "table" and name.endswith(".table.json"):
        added = table_store(run, found["key"], int(found["step"]), path)
        if added is not None:
            return f"{added} new rollouts"
    if found and found["folder"] in _KINDS:
        record: MediaRecord = {"key": found["key"], "step": int(found["step"]), "kind": _KINDS[found["folder"]],
                               "name": name, "data": path.read_bytes()}
        added, problems = media_store(run, [record])
        if problems:
            raise UploadError("; ".join(problems))
        return f"{added} media artifacts"
    try:
        artifact_store_file(run=run, name=artifact_name_check(f"wandb/{name}"), kind="file", path=path)
    except ArtifactError as exc:
        raise UploadError(str(exc)) from exc
    return "1 file"


def upload_receive(*, run: Run, name: str, stream: Any) -> str:
    with tempfile.TemporaryDirectory(prefix="deeprepo-wandb-") as tmp:
        path = Path(tmp) / "upload"
        with open(path, "wb") as out:
            while chunk := stream.read(4 << 20):
                out.write(chunk)
        return upload_store(run=run, name=name, path=path)
