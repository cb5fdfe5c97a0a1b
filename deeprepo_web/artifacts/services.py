"""Artifacts of a run: begin an upload (presigned PUT or multipart), confirm it, download, delete, clean up.

The bytes never pass through the web process when the store is S3: the client PUTs them to
presigned URLs and the server only checks, at confirmation, that the stored object has the
announced size and sha256. With the filesystem store, the web app itself is the "presigned"
endpoint (a signed, expiring URL that streams to disk while hashing).
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from deeprepo_web import storage
from deeprepo_web.artifacts.models import Artifact, ArtifactStatus
from deeprepo_web.runs.models import Run
from deeprepo_web.storage import PartInfo, StorageError

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 1000
MAX_SIZE = 5 * 1024**4  # S3's own limit of one object
MAX_PARTS = 10_000
_KIND = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_SHA = re.compile(r"^[0-9a-f]{64}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ArtifactError(ValueError):
    """Bad input or state; the message is one line naming what was wrong."""

    status = 422


class ArtifactConflict(ArtifactError):
    status = 409


# ---------------------------------------------------------------- validation


def artifact_name_check(name: str) -> str:
    """A relative, '/'-separated path: no '..', no absolute paths, no control characters."""
    if not isinstance(name, str) or not name.strip():
        raise ArtifactError("name: must not be empty")
    if len(name) > MAX_NAME_CHARS:
        raise ArtifactError(f"name: {len(name)} characters is over the limit of {MAX_NAME_CHARS}")
    if "\x00" in name:
        raise ArtifactError("name: must not contain NUL bytes")
    if _CONTROL.search(name):
        raise ArtifactError("name: must not contain control characters")
    if "\\" in name:
        raise ArtifactError("name: use '/' as the separator, not '\\'")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ArtifactError(f"name: {name[:80]!r} is an absolute path; give a relative name")
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ArtifactError(f"name: {name[:80]!r} has an empty, '.' or '..' segment")
    return name


def _check(name: str, kind: str, size: int, sha256: str) -> str:
    artifact_name_check(name)
    if not _KIND.match(kind or ""):
        raise ArtifactError("kind: 1 to 64 lowercase letters, digits, '_', '-' or '.' (e.g. checkpoint, log)")
    if not isinstance(size, int) or size < 0:
        raise ArtifactError("size: must be a non-negative integer (bytes)")
    if size > MAX_SIZE:
        raise ArtifactError(f"size: {size} bytes is over the limit of {MAX_SIZE} bytes (5 TiB)")
    sha = (sha256 or "").lower()
    if not _SHA.match(sha):
        raise ArtifactError("sha256: must be 64 hexadecimal characters")
    return sha


# ---------------------------------------------------------------- upload plan


@dataclass
class UploadPlan:
    method: str  # "none" (already stored) | "put" | "multipart"
    url: str = ""
    part_size: int = 0
    parts: list[dict[str, Any]] = field(default_factory=list)  # [{"number", "url"}] still to upload
    done: list[int] = field(default_factory=list)  # part numbers the store already has
    expires_in: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        if self.method == "put":
            out.update(url=self.url, expires_in=self.expires_in)
        elif self.method == "multipart":
            out.update(part_size=self.part_size, parts=self.parts, done=self.done, expires_in=self.expires_in)
        return out


def part_size_for(size: int) -> int:
    """The configured part size, grown when a file would otherwise need more than 10,000 parts."""
    part = max(5 * 1024 * 1024, settings.DEEPREPO_ARTIFACT_PART_BYTES)
    return max(part, math.ceil(size / MAX_PARTS))


def _new_key(run: Run, name: str) -> str:
    # A random folder per upload: a re-upload under the same name never races the old object.
    return storage.artifact_prefix(run.project_id, run.public_id) + f"{secrets.token_hex(8)}/{name}"


def _objects_drop(artifact: Artifact) -> None:
    """The artifact's object in the store, and the parts of its multipart upload when one is under way."""
    store = storage.backend()
    if artifact.upload_id:
        store.multipart_abort(artifact.storage_key, artifact.upload_id)
    store.delete(artifact.storage_key)


def _reset(artifact: Artifact) -> None:
    """Drop whatever a previous, different upload under this name left in the store."""
    _objects_drop(artifact)
    artifact.upload_id = ""
    artifact.storage_key = _new_key(artifact.run, artifact.name)


def artifact_begin(*, run: Run, name: str, kind: str = "file", size: int, sha256: str) -> tuple[Artifact, UploadPlan]:
    """Create (or resume) the pending artifact `name` and say how to upload its bytes.

    Asking again with the same name, size and sha256 resumes: a multipart upload keeps its
    upload id and the plan lists only the parts the store does not have yet.
    """
    sha = _check(name, kind, size, sha256)
    with transaction.atomic():
        artifact = Artifact.objects.select_for_update().filter(run=run, name=name).first()
        if artifact is None:
            try:
                with transaction.atomic():
                    artifact = Artifact.objects.create(
                        run=run, name=name, kind=kind, size=size, sha256=sha, storage_key=_new_key(run, name)
                    )
            except IntegrityError:  # a concurrent begin of the same name won
                artifact = Artifact.objects.select_for_update().get(run=run, name=name)
        artifact.run = run
        if artifact.status == ArtifactStatus.READY:
            if artifact.sha256 == sha and artifact.size == size:
                return artifact, UploadPlan(method="none")
            raise ArtifactConflict(
                f"name: run {run.public_id} already has an artifact {name[:80]!r} with other content; "
                "delete it first or choose another name"
            )
        if artifact.sha256 != sha or artifact.size != size:
            _reset(artifact)
            artifact.sha256, artifact.size = sha, size
        artifact.kind = kind
        plan = _plan(artifact)
        artifact.save()
    return artifact, plan


def _plan(artifact: Artifact) -> UploadPlan:
    store = storage.backend()
    ttl = settings.DEEPREPO_ARTIFACT_URL_TTL
    if not store.presigns:
        token = storage.signed_token({"a": artifact.pk, "k": artifact.storage_key}, salt=storage.PUT_SALT, ttl=ttl)
        return UploadPlan(method="put", url=reverse("storage_put", args=[token]), expires_in=ttl)
    part = part_size_for(artifact.size)
    if artifact.size < settings.DEEPREPO_ARTIFACT_PART_BYTES or artifact.size <= part:
        url = store.presign_put(artifact.storage_key, ttl=ttl, size=artifact.size)
        assert url is not None
        return UploadPlan(method="put", url=url, expires_in=ttl)
    count = math.ceil(artifact.size / part)
    done: list[PartInfo] = []
    if artifact.upload_id:
        try:
            done = store.multipart_parts(artifact.storage_key, artifact.upload_id)
        except storage.ObjectMissing:
            artifact.upload_id = ""  # aborted or expired on the store's side: start over
    if not artifact.upload_id:
        artifact.upload_id = store.multipart_create(artifact.storage_key)
    # A part counts as done only with the size it must have; a short one is uploaded again.
    have = {p.number for p in done if p.size == _part_len(artifact.size, part, p.number)}
    parts = [
        {"number": n, "url": store.multipart_part_url(artifact.storage_key, artifact.upload_id, n, ttl=ttl)}
        for n in range(1, count + 1) if n not in have
    ]
    return UploadPlan(method="multipart", part_size=part, parts=parts, done=sorted(have), expires_in=ttl)


def _part_len(size: int, part: int, number: int) -> int:
    return min(part, size - (number - 1) * part)


# ---------------------------------------------------------------- confirm


def _hash_object(key: str) -> str:
    digest = hashlib.sha256()
    for chunk in storage.backend().iter_chunks(key):
        digest.update(chunk)
    return digest.hexdigest()


def artifact_confirm(*, artifact: Artifact) -> Artifact:
    """Check the stored object against the announced size and sha256; then the artifact is ready."""
    if artifact.status == ArtifactStatus.READY:
        return artifact
    store = storage.backend()
    if artifact.upload_id:
        part = part_size_for(artifact.size)
        count = math.ceil(artifact.size / part)
        try:
            parts = store.multipart_parts(artifact.storage_key, artifact.upload_id)
        except storage.ObjectMissing as exc:
            Artifact.objects.filter(pk=artifact.pk).update(upload_id="")
            raise ArtifactError("upload: the multipart upload is gone from the store; begin again") from exc
        good = sorted(
            (p for p in parts if p.number <= count and p.size == _part_len(artifact.size, part, p.number)),
            key=lambda p: p.number,
        )
        if len(good) != count:
            missing = sorted(set(range(1, count + 1)) - {p.number for p in good})
            shown = ", ".join(map(str, missing[:10])) + (" …" if len(missing) > 10 else "")
            raise ArtifactError(f"parts: {count - len(missing)} of {count} parts uploaded; missing {shown}")
        store.multipart_complete(artifact.storage_key, artifact.upload_id, good)
        Artifact.objects.filter(pk=artifact.pk).update(upload_id="")
        artifact.upload_id = ""
    try:
        stored = store.size(artifact.storage_key)
    except storage.ObjectMissing as exc:
        raise ArtifactError("upload: no bytes were uploaded for this artifact yet") from exc
    if stored != artifact.size:
        store.delete(artifact.storage_key)
        raise ArtifactError(f"size: the upload has {stored} bytes, {artifact.size} were announced; upload again")
    # The filesystem store verified the sha256 while writing (storage_put); S3 is read back once.
    if store.presigns:
        actual = _hash_object(artifact.storage_key)
        if actual != artifact.sha256:
            store.delete(artifact.storage_key)
            raise ArtifactError(f"sha256: the upload hashes to {actual}, {artifact.sha256} was announced; upload again")
    now = timezone.now()
    Artifact.objects.filter(pk=artifact.pk, status=ArtifactStatus.PENDING).update(
        status=ArtifactStatus.READY, confirmed_at=now
    )
    artifact.refresh_from_db()
    return artifact


# ---------------------------------------------------------------- filesystem "presigned" PUT


def artifact_receive(*, artifact: Artifact, stream: BinaryIO, length: int) -> None:
    """Stream a PUT body to disk while hashing; adopt it only when size and sha256 match."""
    store = storage.backend()
    if not isinstance(store, storage.FilesystemBackend):
        raise ArtifactError("upload: this server stores artifacts in S3; use the presigned URL it gave")
    if length != artifact.size:
        raise ArtifactError(f"size: the request has {length} bytes, {artifact.size} were announced")
    incoming = store.root / ".incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    received = 0
    with tempfile.NamedTemporaryFile(dir=incoming, delete=False) as tmp:
        tmp_path = Path(tmp.name)
        try:
            while received < length:
                chunk = stream.read(min(8 * 1024 * 1024, length - received))
                if not chunk:
                    break
                digest.update(chunk)
                tmp.write(chunk)
                received += len(chunk)
        except BaseException:
            tmp_path.unlink(missing_ok=True)
            raise
    if received != artifact.size:
        tmp_path.unlink(missing_ok=True)
        raise ArtifactError(f"size: received {received} bytes, {artifact.size} were announced")
    if digest.hexdigest() != artifact.sha256:
        tmp_path.unlink(missing_ok=True)
        raise ArtifactError(f"sha256: the upload hashes to {digest.hexdigest()}, {artifact.sha256} was announced")
    store.move_in(artifact.storage_key, tmp_path)


# ---------------------------------------------------------------- server-side artifacts


def artifact_store_file(*, run: Run, name: str, kind: str, path: Path) -> Artifact:
    """Store a file the server itself has (a job's log, an imported source file) as a ready artifact."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * 1024 * 1024):
            digest.update(chunk)
            size += len(chunk)
    sha = _check(name, kind, size, digest.hexdigest())
    existing = Artifact.objects.filter(run=run, name=name).first()
    if existing is not None:
        if existing.status == ArtifactStatus.READY and existing.sha256 == sha:
            return existing
        artifact_delete(artifact=existing)
    key = _new_key(run, name)
    with open(path, "rb") as fh:
        storage.backend().put_file(key, fh)
    now = timezone.now()
    return Artifact.objects.create(run=run, name=name, kind=kind, size=size, sha256=sha, storage_key=key,
                                   status=ArtifactStatus.READY, confirmed_at=now)


# ---------------------------------------------------------------- download, delete, cleanup


def artifact_download_url(*, artifact: Artifact, ttl: int | None = None) -> str:
    """A short-lived URL of the bytes: S3 presigned GET, or the web app's signed download URL."""
    if artifact.status != ArtifactStatus.READY:
        raise ArtifactError("status: the artifact is still being uploaded")
    ttl = ttl or min(settings.DEEPREPO_ARTIFACT_URL_TTL, 3600)
    filename = artifact.name.rsplit("/", 1)[-1]
    store = storage.backend()
    if store.presigns:
        url = store.presign_get(artifact.storage_key, ttl=ttl, filename=filename)
        if url:
            return url
    token = storage.signed_token({"k": artifact.storage_key, "n": filename}, salt=storage.GET_SALT, ttl=ttl)
    return reverse("storage_get", args=[token])


def artifact_delete(*, artifact: Artifact) -> None:
    """Remove the object first: when the store is down this raises and the row stays."""
    _objects_drop(artifact)
    Artifact.objects.filter(pk=artifact.pk).delete()


def artifacts_cleanup(*, older_than: timedelta | None = None) -> int:
    """Remove uploads never confirmed: their partial objects and multipart uploads, then the rows."""
    age = older_than if older_than is not None else timedelta(seconds=settings.DEEPREPO_ARTIFACT_UPLOAD_TIMEOUT)
    cutoff = timezone.now() - age
    removed = 0
    stale = Artifact.objects.filter(status=ArtifactStatus.PENDING, created_at__lt=cutoff).order_by("pk")[:1000]
    for artifact in stale:
        try:
            store = storage.backend()
            if artifact.upload_id:
                store.multipart_abort(artifact.storage_key, artifact.upload_id)
            store.delete(artifact.storage_key)
        except StorageError as exc:
            log.warning("artifacts_cleanup: kept %s for the next round: %s", artifact.pk, exc)
            continue
        # Only if still pending: a confirmation that landed meanwhile wins.
        removed += Artifact.objects.filter(pk=artifact.pk, status=ArtifactStatus.PENDING).delete()[0]
    return removed
