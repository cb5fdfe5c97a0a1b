"""Blob offload at ingest (big bodies, inline base64 images) and the blob view that serves them to members."""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import zlib
from typing import Any

import pytest

from deeprepo_web import storage
from deeprepo_web.artifacts.templatetags.blobs import blob_url
from deeprepo_web.runs.models import BlobRef, ToolCall, Turn
from tests.artifacts.conftest import made_earlier
from tests.factories import rollout


def png(width: int = 64, height: int = 48, seed: int = 0) -> bytes:
    """A real PNG (random pixels, so every seed is a distinct blob)."""
    rng = os.urandom(0) or bytes((seed * 7 + i * 13) % 256 for i in range(width * 3))
    raw = b"".join(b"\x00" + bytes((b + y + seed) % 256 for b in rng) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b"")


def _ingest(api: Any, run_id: str, record: dict[str, Any]) -> None:
    res = api.post(f"/runs/{run_id}/rollouts", [record])
    assert res.status_code == 200, res.content


def _with_image(seed: int, big_output: str = "ok") -> tuple[dict[str, Any], bytes]:
    image = png(seed=seed)
    b64 = base64.b64encode(image).decode()
    record = rollout(f"img-{seed}", turns=1)
    record["turns"][0]["content"] = f"Here is the screenshot:\n![screen](data:image/png;base64,{b64})\nand a bare one data:image/png;base64,{b64} end"
    record["turns"][1]["tool_calls"][0]["output"] = big_output
    return record, image


def test_inline_images_move_to_the_store(api: Any, run_id: str, store: str) -> None:
    record, image = _with_image(seed=hash(store) % 200)
    _ingest(api, run_id, record)
    sha = hashlib.sha256(image).hexdigest()
    turn = Turn.objects.get(rollout__run__public_id=run_id, index=0)
    assert "base64" not in turn.content
    assert turn.content == f"Here is the screenshot:\n![screen](blob:{sha})\nand a bare one ![image](blob:{sha}) end"
    assert turn.metadata["images"][0] == {"sha": sha, "type": "image/png", "size": len(image)}
    assert storage.blob_get(sha) == image  # stored once though it appears twice
    assert BlobRef.objects.filter(sha=sha, run__public_id=run_id).count() == 1


def test_big_tool_output_offloaded_with_ref(api: Any, run_id: str, store: str, settings: Any) -> None:
    settings.DEEPREPO_BLOB_THRESHOLD = 256 * 1024
    big = ("line of a long pytest log " + os.urandom(4).hex() + "\n") * 20_000
    record = rollout("big", turns=1)
    record["turns"][1]["tool_calls"][0]["output"] = big
    _ingest(api, run_id, record)
    call = ToolCall.objects.get(rollout__run__public_id=run_id, name="read_file")
    assert call.output_blob and call.output_size == len(big.encode()) and len(call.output) < len(big)
    assert storage.blob_get(call.output_blob).decode() == big
    assert BlobRef.objects.filter(sha=call.output_blob).exists()


def test_blob_view_serves_members_only(client: Any, api: Any, run_id: str, team: Any, fs_store: str) -> None:
    record, image = _with_image(seed=1)
    _ingest(api, run_id, record)
    sha = hashlib.sha256(image).hexdigest()
    url = f"/p/demo/blobs/{sha}/"

    client.force_login(team.viewer)
    res = client.get(url)
    assert res.status_code == 200 and res["Content-Type"] == "image/png" and res.content == image
    assert res["X-Content-Type-Options"] == "nosniff" and "sandbox" in res["Content-Security-Policy"]

    client.force_login(team.outsider)
    assert client.get(url).status_code == 404
    # A member of another project, naming a blob that exists but is not theirs: 404 too.
    assert client.get(f"/p/other/blobs/{sha}/").status_code == 404
    client.logout()
    assert client.get(url).status_code == 302  # to the login page


def test_text_blob_is_never_html(client: Any, api: Any, run_id: str, team: Any, fs_store: str,
                                 settings: Any) -> None:
    settings.DEEPREPO_BLOB_THRESHOLD = 1024
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>" * 100
    record = rollout("xss", turns=1)
    record["turns"][1]["tool_calls"][0]["output"] = hostile
    _ingest(api, run_id, record)
    sha = ToolCall.objects.get(rollout__run__public_id=run_id, name="read_file").output_blob
    client.force_login(team.viewer)
    res = client.get(f"/p/demo/blobs/{sha}/")
    assert res["Content-Type"] == "text/plain; charset=utf-8" and res.content.decode() == hostile
    frag = client.get(f"/p/demo/blobs/{sha}/", headers={"HX-Request": "true"})  # "load all" swaps HTML in
    assert b"<script>" not in frag.content and b"&lt;script&gt;alert(1)" in frag.content


def test_signed_blob_url_expires_and_resists_tampering(client: Any, api: Any, run_id: str, team: Any,
                                                       fs_store: str) -> None:
    record, image = _with_image(seed=2)
    _ingest(api, run_id, record)
    sha = hashlib.sha256(image).hexdigest()
    client.force_login(team.viewer)
    url = blob_url("demo", sha)
    assert client.get(url).content == image
    assert client.get(url[:-3] + ("xyz" if not url.endswith("xyz") else "abc")).status_code == 404
    with made_earlier():
        short = blob_url("demo", sha, ttl=1)
    assert client.get(short).status_code == 404
    # A token made for one blob does not open another.
    other_sha = "0" * 64
    token = url.split("?t=", 1)[1]
    assert client.get(f"/p/demo/blobs/{other_sha}/?t={token}").status_code == 404


@pytest.mark.parametrize("bad", ["../../secret_key", "A" * 64, "zz"])
def test_blob_view_refuses_bad_shas(client: Any, team: Any, fs_store: str, bad: str) -> None:
    client.force_login(team.owner)
    assert client.get(f"/p/demo/blobs/{bad}/").status_code == 404
