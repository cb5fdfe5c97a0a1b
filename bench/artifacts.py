"""Artifact upload throughput: our presigned multipart path vs boto3's own upload_file, same S3 server.

    uv run python bench/artifacts.py [--size-mb 1024] [--part-mb 64] [--workers 4]

Starts a local S3 server (`rclone serve s3` on 127.0.0.1), a scratch database and the web app
(gunicorn) configured for that bucket; writes a random file; then uploads it
  1. with deeprepo_client's run.log_artifact (begin -> presigned part PUTs in a thread pool -> confirm),
  2. with boto3 upload_file (TransferConfig with the same part size and concurrency).
Target: presigned rate >= 80 % of boto3's. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import api_key, scratch_database, web_server  # noqa: E402
from tests.infra.s3 import BUCKET, start_s3  # noqa: E402


def random_file(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        left = size
        while left:
            chunk = os.urandom(min(left, 16 << 20))
            fh.write(chunk)
            left -= len(chunk)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--part-mb", type=int, default=64)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    size = args.size_mb * 1024 * 1024
    part = args.part_mb * 1024 * 1024

    s3 = start_s3()
    tmp = Path(tempfile.mkdtemp(prefix="deeprepo-bench-art-"))
    try:
        os.environ.update(s3.env())
        os.environ.update({
            "DEEPREPO_S3_BUCKET": BUCKET, "DEEPREPO_S3_ENDPOINT_URL": s3.endpoint,
            "DEEPREPO_ARTIFACT_PART_BYTES": str(part), "DEEPREPO_DATA_DIR": str(tmp / "data"),
        })
        db = scratch_database("bench_artifacts")
        key = api_key(db, "bench")
        path = tmp / "adapter_model.safetensors"
        random_file(path, size)

        import boto3.s3.transfer

        import deeprepo_client
        from deeprepo_client.artifacts import file_sha256

        # Hash once up front: both paths then pay only for moving bytes (the client caches it).
        t0 = time.perf_counter()
        file_sha256(path)
        hash_s = time.perf_counter() - t0

        with web_server(db) as site:
            run = deeprepo_client.init(project="bench", name="artifact-bench", url=site, api_key=key,
                                       spool_dir=tmp / "spool")
            from deeprepo_client import artifacts as client_artifacts

            sha = file_sha256(path)
            real = client_artifacts.file_sha256
            client_artifacts.file_sha256 = lambda p: sha  # type: ignore[assignment]  # already measured above
            uploaded_at: list[float] = []
            real_put = client_artifacts._put

            def timed_put(*a, **kw):  # type: ignore[no-untyped-def]
                etag = real_put(*a, **kw)
                uploaded_at.append(time.perf_counter())
                return etag

            client_artifacts._put = timed_put  # type: ignore[assignment]
            t0 = time.perf_counter()
            art = run.log_artifact(path, kind="checkpoint", workers=args.workers)
            total_s = time.perf_counter() - t0
            upload_s = max(uploaded_at) - t0
            client_artifacts.file_sha256 = real  # type: ignore[assignment]
            assert art["status"] == "ready" and art["sha256"] == sha
            run.finish()

        client = s3.client()
        config = boto3.s3.transfer.TransferConfig(multipart_threshold=part, multipart_chunksize=part,
                                                  max_concurrency=args.workers, use_threads=True)
        t0 = time.perf_counter()
        client.upload_file(str(path), BUCKET, "boto3/adapter_model.safetensors", Config=config)
        boto_s = time.perf_counter() - t0  # includes CompleteMultipartUpload (the server joins the parts)

        mb = size / (1024 * 1024)
        result = {
            "size_mb": args.size_mb,
            "part_mb": args.part_mb,
            "workers": args.workers,
            "presigned_mb_per_s": round(mb / upload_s, 1),
            "boto3_mb_per_s": round(mb / boto_s, 1),
            "ratio": round((mb / upload_s) / (mb / boto_s), 3),
            "presigned_with_confirm_mb_per_s": round(mb / total_s, 1),
            "confirm_s": round(total_s - upload_s, 2),
            "client_sha256_s": round(hash_s, 2),
        }
        print(json.dumps(result))
    finally:
        s3.stop()
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
