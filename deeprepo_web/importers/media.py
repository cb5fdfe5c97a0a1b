"""Media files a parser found (W&B images, HTML, audio, video logged outside tables) -> run artifacts.

Each file becomes a ready artifact named `media/<key>/step-<step>/<file name>` with the kind of
media (image, html, audio, video; other files `media`), so the run's Artifacts tab lists them by key
and step and a download gives the original bytes. Images also go to the blob store (referenced by
the run) so the tab shows them as thumbnails through the blob view, which serves images inline and
nothing else. Names and bytes are fixed by the file, so a re-import finds every artifact already
there and adds nothing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.db import connection

from deeprepo_client.formats.wandb_media import artifact_kind, artifact_name
from deeprepo_client.records import MediaRecord
from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.artifacts.services import ArtifactError, artifact_name_check, artifact_store_file
from deeprepo_web.runs.models import Run
from deeprepo_web.storage import blob_put


def _blob_refs(run: Run, shas: set[str]) -> None:
    with connection.cursor() as cur:
        cur.execute("INSERT INTO runs_blobref (sha, run_id) SELECT s, %s FROM unnest(%s::text[]) AS s "
                    "ON CONFLICT DO NOTHING", [run.pk, sorted(shas)])


def media_store(run: Run, records: list[MediaRecord]) -> tuple[int, list[str]]:
    """Store each file; returns (artifacts added, [why a file was not stored])."""
    before = Artifact.objects.filter(run=run).count()
    problems: list[str] = []
    images: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="deeprepo-media-") as tmp:
        spool = Path(tmp) / "file"
        for record in records:
            kind = artifact_kind(record)
            try:
                name = artifact_name_check(artifact_name(record))
                spool.write_bytes(record["data"])
                artifact_store_file(run=run, name=name, kind=kind, path=spool)
            except ArtifactError as exc:
                problems.append(f"{record['kind']} {str(record['key'])[:80]!r} at step {record['step']}: {exc}")
                continue
            if kind == "image":
                images.add(blob_put(record["data"]))
    if images:
        _blob_refs(run, images)
    return Artifact.objects.filter(run=run).count() - before, problems
