"""Backup and restore of one install: the database (pg_dump custom format) and every object of the
blob store (filesystem or S3), consistent with each other.

Consistency: the dump is taken from an exported snapshot, and in that same snapshot we read which
objects the database refers to (blobs by sha, ready artifacts). Objects are copied after the dump;
objects are never changed once written (blobs are content addressed, artifacts are new keys), so
every referenced object is still there unless a run was deleted during the backup: the backup then
names those objects and fails, rather than keeping a copy that would restore with holes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from django.db import connection
from django.utils import timezone

from deeprepo_web import storage
from deeprepo_web.ops.pg import libpq_env, run_tool
from deeprepo_web.runs.dbsettings import database_settings_apply

FORMAT = 1
OBJECTS = "objects"


class BackupError(Exception):
    """One line for the operator: what went wrong and what to do."""


@dataclass
class Summary:
    objects: int = 0
    object_bytes: int = 0
    dump_bytes: int = 0
    missing: list[str] = field(default_factory=list)


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * 1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _dump_with_referenced(target: Path) -> set[str]:
    """pg_dump from a snapshot, and the object keys that snapshot refers to."""
    with connection.cursor() as cur:
        cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            cur.execute("SELECT pg_export_snapshot()")
            snapshot = cur.fetchone()[0]
            run_tool(["pg_dump", "-Fc", "--no-owner", "--no-privileges", f"--snapshot={snapshot}", "-f", str(target)])
            cur.execute("SELECT DISTINCT sha FROM runs_blobref")
            keys = {storage.blob_key(sha) for (sha,) in cur.fetchall()}
            cur.execute("SELECT storage_key FROM runs_artifact WHERE status = 'ready'")
            keys.update(key for (key,) in cur.fetchall())
        finally:
            cur.execute("COMMIT")
    return keys


def backup_create(folder: Path) -> Summary:
    if folder.exists() and any(folder.iterdir()):
        raise BackupError(f"{folder}: give a new or empty folder; a backup never overwrites another")
    (folder / OBJECTS).mkdir(parents=True, exist_ok=True)
    summary = Summary()
    referenced = _dump_with_referenced(folder / "db.dump")
    summary.dump_bytes = (folder / "db.dump").stat().st_size
    store = storage.backend()
    copied = set()
    for key in store.keys():
        path = folder / OBJECTS / key
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            for chunk in store.iter_chunks(key):
                out.write(chunk)
                summary.object_bytes += len(chunk)
        copied.add(key)
    summary.objects = len(copied)
    summary.missing = sorted(referenced - copied)
    manifest = {"format": FORMAT, "created_at": timezone.now().isoformat(), "store": store.name,
                "dump_sha256": _file_sha(folder / "db.dump"), "objects": summary.objects,
                "object_bytes": summary.object_bytes, "missing": summary.missing,
                "migrations": _migrations()}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    if summary.missing:
        raise BackupError(f"{len(summary.missing)} object(s) the database refers to were deleted while the backup "
                          f"ran (e.g. {summary.missing[0]}): run the backup again into a new folder")
    return summary


def _migrations() -> dict[str, str]:
    with connection.cursor() as cur:
        cur.execute("SELECT app, max(name) FROM django_migrations GROUP BY app ORDER BY app")
        return dict(cur.fetchall())


def backup_restore(folder: Path) -> Summary:
    manifest_path = folder / "manifest.json"
    if not manifest_path.exists():
        raise BackupError(f"{folder}: no manifest.json, not a deeprepo backup")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != FORMAT or manifest.get("missing"):
        raise BackupError(f"{folder}: an incomplete or unknown backup (format {manifest.get('format')!r})")
    dump = folder / "db.dump"
    if _file_sha(dump) != manifest["dump_sha256"]:
        raise BackupError(f"{dump}: the file changed since the backup (sha256 differs); it cannot be trusted")
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
        if cur.fetchone()[0]:
            raise BackupError(f"the database {connection.settings_dict['NAME']!r} is not empty: restore into a new "
                              "one (createdb), then point DATABASE_URL at it")
    store = storage.backend()
    if next(iter(store.keys()), None) is not None:
        raise BackupError(f"the {store.name} store is not empty: restore into a new bucket or data folder")
    connection.close()  # pg_restore needs the database to itself for nothing, but ours holds no locks either way
    run_tool(["pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--single-transaction",
              "-d", libpq_env()["PGDATABASE"], str(dump)])
    with connection.cursor() as cur:  # settings of the database itself, which a dump does not hold
        database_settings_apply(cur)
    summary = Summary(dump_bytes=dump.stat().st_size)
    root = folder / OBJECTS
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        with open(path, "rb") as fh:
            store.put_file(path.relative_to(root).as_posix(), fh)
        summary.objects += 1
        summary.object_bytes += path.stat().st_size
    return summary


__all__ = ["BackupError", "Summary", "backup_create", "backup_restore"]
