"""Inline base64 images (data URLs in text, OpenAI-style image_url parts, Anthropic base64 sources,
nested in lists) go to the blob store at ingest; the trajectory shows thumbnails that open the full
image, and no page of it passes 200 KB."""

from __future__ import annotations

import base64
import os
import random
import struct
import zlib
from typing import Any

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def noisy_png(width: int, height: int, seed: int) -> bytes:
    """A real PNG of random pixels (noise does not compress: about width x height x 3 bytes)."""
    rng = random.Random(seed)
    raw = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


PROMPT_PNG = noisy_png(300, 300, 1)  # ~270 KB: a screenshot-sized prompt image
TURN_PNG = noisy_png(120, 80, 2)
TOOL_PNG = noisy_png(90, 90, 3)
CLAUDE_PNG = noisy_png(60, 40, 4)


def image_rollout() -> dict[str, Any]:
    return {
        "example_key": "chart-question-1",
        "reward": 1.0,
        "prompt": [
            {"role": "system", "content": "Answer about the chart."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is the trend in this chart?"},
                {"type": "image_url", "image_url": {"url": data_url(PROMPT_PNG), "detail": "high"}},
            ]},
        ],
        "turns": [
            {"role": "user", "content": f"Here it is again: ![the chart]({data_url(TURN_PNG)}) and the rest."},
            {"role": "assistant", "content": "Let me zoom in.", "tool_calls": [
                {"call_id": "z1", "name": "zoom",
                 "arguments": {"views": [[{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                        "data": base64.b64encode(CLAUDE_PNG).decode()}}]]},
                 "output": data_url(TOOL_PNG)},
            ]},
            {"role": "assistant", "content": "It rises."},
        ],
        "final_answer": "It rises.",
    }


def test_ingest_moves_every_inline_image_to_the_blob_store(api: Any, team: Any) -> None:
    from django.db import connection

    from deeprepo_web.runs.models import BlobRef, Example, Rollout, ToolCall, Turn
    from deeprepo_web.storage import blob_get

    run_id = api.post("/runs", {"name": "vision-eval", "kind": "eval"}).json()["id"]
    res = api.post(f"/runs/{run_id}/rollouts", [image_rollout()])
    assert res.status_code == 200, res.content
    with connection.cursor() as cur:
        for table in ("runs_example", "runs_rollout", "runs_turn", "runs_toolcall"):
            cur.execute(f"SELECT count(*) FROM {table} WHERE position('data:image/' in {table}::text) > 0")  # noqa: S608
            assert cur.fetchone()[0] == 0, table
    shas = set(BlobRef.objects.filter(run__public_id=run_id).values_list("sha", flat=True))
    stored = {blob_get(s) for s in shas}
    assert {PROMPT_PNG, TURN_PNG, TOOL_PNG, CLAUDE_PNG} <= stored
    part = Example.objects.get(key="chart-question-1").prompt[1]["content"][1]
    assert part["image_url"]["url"].startswith("blob:") and part["image_url"]["detail"] == "high"
    rollout = Rollout.objects.get(run__public_id=run_id)
    first = Turn.objects.get(rollout=rollout, index=0)
    assert "![the chart](blob:" in first.content
    (image,) = first.metadata["images"]
    assert image["type"] == "image/png" and image["size"] == len(TURN_PNG)
    call = ToolCall.objects.get(rollout=rollout)
    assert call.output.startswith("blob:")
    assert call.arguments["views"][0][0]["image_url"]["url"].startswith("blob:")
    # The same batch again stores nothing new (the uid hash sees the same blob markers).
    assert api.post(f"/runs/{run_id}/rollouts", [image_rollout()]).json()["stored"] == 0


@pytest.mark.browser
def test_trajectory_with_images_is_small_and_shows_thumbnails(browser_page: Any, live_server: Any, team: Any,
                                                              api: Any, screenshot_dir: str) -> None:
    from deeprepo_web.runs.models import Rollout

    run_id = api.post("/runs", {"name": "vision-eval", "kind": "eval"}).json()["id"]
    api.post(f"/runs/{run_id}/rollouts", [image_rollout()])
    rollout = Rollout.objects.select_related("example").get(run__public_id=run_id)
    page = browser_page(team.viewer)
    url = f"{live_server.url}/p/demo/runs/{run_id}/rollouts/{rollout.pk}/"
    response = page.goto(url)
    assert response is not None and len(response.body()) < 200_000
    page.click("details.tj-prompt summary")
    thumbs = page.locator("a.thumb img")
    assert thumbs.count() == 4  # prompt part, the turn's Markdown image, the tool's argument and output
    assert page.locator(".arg-images a.thumb").count() == 1
    page.wait_for_function("() => [...document.querySelectorAll('a.thumb img')].every(i => i.complete && i.naturalWidth > 0)")
    widths = page.evaluate("[...document.querySelectorAll('details.tj-prompt a.thumb img')].map(i => i.naturalWidth)")
    assert widths == [300]  # the full image behind a thumbnail
    box = page.locator("details.tj-prompt a.thumb img").bounding_box()
    assert box is not None and box["height"] <= 180
    assert page.evaluate("document.body.scrollHeight") < 5000
    href = page.locator("details.tj-prompt a.thumb").get_attribute("href")
    full = page.request.get(f"{live_server.url}{href}")
    assert full.headers["content-type"] == "image/png" and full.body() == PROMPT_PNG
    page.screenshot(path=os.path.join(screenshot_dir, "trajectory-image.png"), full_page=True)

    example = page.goto(f"{live_server.url}/p/demo/examples/{rollout.example_id}/")
    assert example is not None and len(example.body()) < 200_000
    assert page.locator("a.thumb img").count() >= 1
    assert page.watched.errors == []


def test_import_moves_images_too(team: Any, tmp_path: Any) -> None:
    import json

    from deeprepo_web.importers.pipeline import import_path
    from deeprepo_web.runs.models import BlobRef, Example

    folder = tmp_path / "vision--gpt__abc"
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps({"env_id": "vision", "model": "m", "num_examples": 1,
                                                      "rollouts_per_example": 1}))
    row = {"example_id": 0, "prompt": image_rollout()["prompt"],
           "completion": [{"role": "assistant", "content": "It rises."}], "reward": 1.0, "answer": "rises"}
    (folder / "results.jsonl").write_text(json.dumps(row) + "\n")
    report = import_path(project=team.project, path=folder)
    assert report.runs
    example = Example.objects.get(project=team.project)
    assert "data:image/" not in json.dumps(example.prompt)
    assert BlobRef.objects.filter(run__project=team.project).count() == 1
