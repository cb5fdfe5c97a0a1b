"""Objects in an S3 bucket through boto3 (any S3-compatible server: AWS, MinIO, Ceph, rclone).

Credentials come from the standard AWS variables / config chain; every call has a connect and
read timeout and at most one retry, so a dead endpoint fails in seconds with a clear line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from deeprepo_web.storage.base import Backend, ObjectMissing, PartInfo, StorageError, StorageUnavailable

T = TypeVar("T")
_MISSING_CODES = {"404", "NoSuchKey", "NotFound", "NoSuchUpload"}


class S3Backend(Backend):
    name = "s3"
    presigns = True

    def __init__(self, *, bucket: str, endpoint_url: str = "", region: str = "us-east-1",
                 public_endpoint_url: str = "", connect_timeout: float = 3.0, read_timeout: float = 60.0) -> None:
        self.bucket = bucket
        self.endpoint_url = endpoint_url or None
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retries={"max_attempts": 2, "mode": "standard"},
        )
        session = boto3.session.Session()
        self.client = session.client("s3", endpoint_url=self.endpoint_url, region_name=region, config=config)
        # Presigned URLs are for the client's machine: it may reach S3 under another name.
        if public_endpoint_url and public_endpoint_url != endpoint_url:
            self.signer = session.client("s3", endpoint_url=public_endpoint_url, region_name=region, config=config)
        else:
            self.signer = self.client

    def _where(self) -> str:
        return f"s3://{self.bucket}" + (f" at {self.endpoint_url}" if self.endpoint_url else "")

    def _call(self, fn: Callable[..., T], key: str, **kwargs: Any) -> T:
        try:
            return fn(Bucket=self.bucket, **kwargs)
        except ClientError as exc:
            err = exc.response.get("Error", {})
            code = str(err.get("Code", ""))
            if code in _MISSING_CODES:
                raise ObjectMissing(key) from exc
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if status >= 500 or status == 0:
                raise StorageUnavailable(f"object store {self._where()} failed: {code} {err.get('Message', '')}".strip()) from exc
            raise StorageError(f"object store {self._where()} refused: {code} {err.get('Message', '')}".strip()) from exc
        except NoCredentialsError as exc:
            raise StorageError(f"no S3 credentials for {self._where()} (set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)") from exc
        except BotoCoreError as exc:
            raise StorageUnavailable(f"object store {self._where()} unreachable: {exc}") from exc

    # ------------------------------------------------------------ objects

    def put_bytes(self, key: str, data: bytes, *, content_type: str = "application/octet-stream") -> None:
        self._call(self.client.put_object, key, Key=key, Body=data, ContentType=content_type)

    def put_file(self, key: str, fh: BinaryIO, *, content_type: str = "application/octet-stream") -> None:
        self._call(self.client.upload_fileobj, key, Fileobj=fh, Key=key, ExtraArgs={"ContentType": content_type})

    def get_bytes(self, key: str) -> bytes:
        res = self._call(self.client.get_object, key, Key=key)
        return self._read(res["Body"].read, key)

    def _read(self, fn: Callable[[], T], key: str) -> T:
        try:
            return fn()
        except BotoCoreError as exc:
            raise StorageUnavailable(f"object store {self._where()} broke off reading {key}: {exc}") from exc

    def iter_chunks(self, key: str, chunk_size: int = 8 * 1024 * 1024) -> Iterator[bytes]:
        res = self._call(self.client.get_object, key, Key=key)
        body = res["Body"]
        try:
            yield from body.iter_chunks(chunk_size)
        except BotoCoreError as exc:
            raise StorageUnavailable(f"object store {self._where()} broke off reading {key}: {exc}") from exc
        finally:
            body.close()

    def size(self, key: str) -> int:
        return int(self._call(self.client.head_object, key, Key=key)["ContentLength"])

    def delete(self, key: str) -> None:
        try:
            self._call(self.client.delete_object, key, Key=key)
        except ObjectMissing:
            pass

    def keys(self, prefix: str = "") -> Iterator[str]:
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"Prefix": prefix, "MaxKeys": 1000}
            if token:
                kwargs["ContinuationToken"] = token
            page = self._call(self.client.list_objects_v2, prefix, **kwargs)
            yield from (obj["Key"] for obj in page.get("Contents", []))
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken")

    def delete_prefix(self, prefix: str) -> int:
        if not prefix.endswith("/"):
            raise StorageError("delete_prefix needs a prefix ending with '/'")
        keys = list(self.keys(prefix))  # listed first: deleting while paging would shift the pages
        for start in range(0, len(keys), 1000):  # delete_objects takes at most 1,000 keys
            self._call(self.client.delete_objects, prefix,
                       Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]], "Quiet": True})
        return len(keys)

    # ------------------------------------------------------------ presigned

    def _presign(self, method: str, params: dict[str, Any], ttl: int) -> str:
        try:
            return str(self.signer.generate_presigned_url(method, Params={"Bucket": self.bucket, **params},
                                                          ExpiresIn=ttl))
        except (BotoCoreError, ClientError) as exc:
            raise StorageError(f"cannot presign for {self._where()}: {exc}") from exc

    def presign_get(self, key: str, *, ttl: int, filename: str | None = None) -> str:
        params: dict[str, Any] = {"Key": key}
        if filename:
            safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in filename)[:200] or "download"
            params["ResponseContentDisposition"] = f'attachment; filename="{safe}"'
        return self._presign("get_object", params, ttl)

    def presign_put(self, key: str, *, ttl: int, size: int) -> str:
        return self._presign("put_object", {"Key": key}, ttl)

    def multipart_create(self, key: str) -> str:
        res = self._call(self.client.create_multipart_upload, key, Key=key)
        return str(res["UploadId"])

    def multipart_part_url(self, key: str, upload_id: str, number: int, *, ttl: int) -> str:
        return self._presign("upload_part", {"Key": key, "UploadId": upload_id, "PartNumber": number}, ttl)

    def multipart_parts(self, key: str, upload_id: str) -> list[PartInfo]:
        parts: list[PartInfo] = []
        marker = 0
        while True:
            page = self._call(self.client.list_parts, key, Key=key, UploadId=upload_id, MaxParts=1000,
                              PartNumberMarker=marker)
            for p in page.get("Parts", []):
                parts.append(PartInfo(number=int(p["PartNumber"]), size=int(p["Size"]), etag=str(p["ETag"])))
            if not page.get("IsTruncated"):
                return parts
            marker = int(page.get("NextPartNumberMarker") or parts[-1].number)

    def multipart_complete(self, key: str, upload_id: str, parts: list[PartInfo]) -> None:
        self._call(self.client.complete_multipart_upload, key, Key=key, UploadId=upload_id,
                   MultipartUpload={"Parts": [{"PartNumber": p.number, "ETag": p.etag} for p in parts]})

    def multipart_abort(self, key: str, upload_id: str) -> None:
        try:
            self._call(self.client.abort_multipart_upload, key, Key=key, UploadId=upload_id)
        except ObjectMissing:
            pass
