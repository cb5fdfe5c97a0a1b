"""Upload a file as an artifact of a run: straight to the store through presigned URLs.

    begin   POST /runs/{id}/artifacts {name, kind, size, sha256}  -> a single PUT URL, or part URLs
    bytes   PUT to those URLs (parts in a small thread pool), streamed from the file
    confirm POST /runs/{id}/artifacts/{aid}/confirm                -> the server checks size and sha256

A small resume file (beside the spool) remembers the file's sha256 and the artifact id, so an
interrupted upload started again neither re-hashes the file nor re-sends the parts the store
already has: asking to begin again returns only the missing parts.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from deeprepo_client.transport import Refused, ServerAway, Transport, backoff

CHUNK = 1024 * 1024
PART_ATTEMPTS = 4


class ArtifactUploadError(Exception):
    """The upload did not finish; started again with the same file it resumes."""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _Resume:
    """{path, size, mtime_ns, sha256, name, artifact_id} of one file being uploaded to one run."""

    def __init__(self, folder: Path, run_id: str, path: Path) -> None:
        key = hashlib.sha256(f"{run_id}\0{path}".encode()).hexdigest()[:32]
        self.file = folder / f"{key}.json"

    def load(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.file.read_text()))
        except (OSError, ValueError):
            return {}

    def save(self, state: dict[str, Any]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.file)

    def clear(self) -> None:
        self.file.unlink(missing_ok=True)


def _stream(path: Path, offset: int, length: int, md5: Any | None = None) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        fh.seek(offset)
        left = length
        while left > 0:
            chunk = fh.read(min(CHUNK, left))
            if not chunk:
                raise ArtifactUploadError(f"{path} shrank while it was being uploaded")
            if md5 is not None:
                md5.update(chunk)
            left -= len(chunk)
            yield chunk


def _put(http: httpx.Client, url: str, path: Path, offset: int, length: int) -> str:
    """PUT length bytes of path from offset; returns the ETag. Raises on any refusal."""
    md5 = hashlib.md5(usedforsecurity=False)
    # An explicit Content-Length keeps httpx from chunked encoding, which presigned PUTs refuse.
    res = http.put(url, content=_stream(path, offset, length, md5), headers={"Content-Length": str(length)})
    if res.status_code >= 400:
        raise _PartRefused(res.status_code, _s3_message(res))
    etag = res.headers.get("etag", "").strip('"')
    # S3's ETag of a part (or a single PUT) is the MD5 of its bytes: a free end-to-end check.
    if etag and len(etag) == 32 and etag != md5.hexdigest():
        raise _PartRefused(0, f"ETag {etag} does not match the MD5 of the bytes sent")
    return etag


class _PartRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


def _s3_message(res: httpx.Response) -> str:
    """One line from a refusal: our JSON {"error"} or S3's XML <Code>/<Message>."""
    text = res.text[:4000]
    try:
        body = res.json()
        if isinstance(body, dict) and body.get("error"):
            return str(body["error"])
    except ValueError:
        pass
    found = [text.split(f"<{t}>", 1)[1].split(f"</{t}>", 1)[0] for t in ("Code", "Message") if f"<{t}>" in text]
    return (": ".join(found) or text.strip() or res.reason_phrase)[:300]


def upload_artifact(
    transport: Transport,
    run_id: str,
    path: str | os.PathLike[str],
    *,
    kind: str = "file",
    name: str | None = None,
    resume_dir: Path,
    workers: int = 4,
    timeout: float = 300.0,
    on_part: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Upload path; returns the server's artifact record once it is confirmed."""
    file = Path(path).resolve()
    st = file.stat()
    name = name or file.name
    resume = _Resume(resume_dir, run_id, file)
    state = resume.load()
    if not (state.get("size") == st.st_size and state.get("mtime_ns") == st.st_mtime_ns and state.get("sha256")):
        state = {"path": str(file), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": file_sha256(file)}
        resume.save(state)
    body = {"name": name, "kind": kind, "size": st.st_size, "sha256": state["sha256"]}
    last_error = ""
    with httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0)) as http:
        for attempt in range(PART_ATTEMPTS):
            # Begin (again): a resumed multipart upload answers with only the parts still missing.
            begun = transport.request("POST", f"/runs/{run_id}/artifacts", body)
            artifact, plan = begun["artifact"], begun["upload"]
            resume.save({**state, "name": name, "artifact_id": artifact["id"]})
            if plan["method"] == "none":
                resume.clear()
                return dict(artifact)
            try:
                if plan["method"] == "put":
                    _put(http, plan["url"], file, 0, st.st_size)
                else:
                    _put_parts(http, plan, file, st.st_size, workers, on_part)
            except (_PartRefused, httpx.HTTPError) as exc:
                last_error = str(exc)
                if isinstance(exc, _PartRefused) and exc.status in (400, 409, 411, 422):
                    raise ArtifactUploadError(f"upload of {file} refused: {exc}") from exc
                time.sleep(backoff(attempt))
                continue  # expired URLs or a dropped connection: begin again for fresh URLs
            try:
                done = transport.request("POST", f"/runs/{run_id}/artifacts/{artifact['id']}/confirm")
            except Refused as exc:
                raise ArtifactUploadError(f"upload of {file} not accepted: {exc.message}") from exc
            resume.clear()
            return dict(done)
    raise ArtifactUploadError(
        f"upload of {file} did not finish after {PART_ATTEMPTS} attempts ({last_error}); "
        "call log_artifact again with the same file to resume"
    )


def _put_parts(http: httpx.Client, plan: dict[str, Any], file: Path, size: int, workers: int,
               on_part: Callable[[int], None] | None) -> None:
    part_size = int(plan["part_size"])

    def one(part: dict[str, Any]) -> None:
        number = int(part["number"])
        offset = (number - 1) * part_size
        _put(http, part["url"], file, offset, min(part_size, size - offset))
        if on_part is not None:
            on_part(number)

    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="deeprepo-part") as pool:
        futures = [pool.submit(one, p) for p in plan["parts"]]
        errors = [f.exception() for f in futures]
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first


__all__ = ["ArtifactUploadError", "ServerAway", "file_sha256", "upload_artifact"]
