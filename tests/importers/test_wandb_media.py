"""W&B media logged outside tables (an image under one key at steps 1 and 2, a list of two images and
an HTML page at step 2),
written by the real `wandb` package offline: each file is kept as a run artifact named by key and
step with its exact bytes, images also as blobs that the Artifacts tab shows as thumbnails; a
re-import adds nothing; outsiders see nothing."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deeprepo_web.artifacts.models import Artifact
from deeprepo_web.runs.models import BlobRef, Run
from tests.importers.writers.wandb_media import HTML

pytestmark = pytest.mark.timeout(600)

WRITER = Path(__file__).parent / "writers" / "wandb_media.py"


@pytest.fixture(scope="module")
def media_run(tmp_path_factory: Any) -> Path:
    root = tmp_path_factory.mktemp("wandb-media")
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(root), "WANDB_SILENT": "true",
           "WANDB_DISABLE_GIT": "true"}
    done = subprocess.run([sys.executable, str(WRITER), "media-run"], env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return next((root / "wandb").glob("offline-run-*"))


def _files(run_dir: Path) -> dict[str, bytes]:
    """What wandb wrote under files/media, by path relative to files/."""
    media = run_dir / "files" / "media"
    return {str(p.relative_to(run_dir / "files")): p.read_bytes() for p in sorted(media.rglob("*")) if p.is_file()}


def _body(res: Any) -> bytes:
    return b"".join(res.streaming_content) if getattr(res, "streaming", False) else res.content


def test_media_become_artifacts_with_key_and_step(media_run: Path, do_import: Any, team: Any, settings: Any,
                                                  client: Any) -> None:
    settings.DEEPREPO_S3_BUCKET = ""  # the filesystem store
    files = _files(media_run)
    images = sorted(p for p in files if p.startswith("media/images/samples/board_"))
    grid = sorted(p for p in files if p.startswith("media/images/grid_"))
    htmls = [p for p in files if p.startswith("media/html/report_")]
    assert len(images) == 2 and len(grid) == 2 and len(htmls) == 1 and len(files) == 5 and HTML in files[htmls[0]].decode()  # wandb adds a <base> and a stylesheet

    report = do_import(media_run)
    assert not report.problems, report.problems
    assert report.runs[0].media == 5
    run = Run.objects.get(public_id=report.runs[0].public_id)
    stored = {a.name: a for a in Artifact.objects.filter(run=run)}
    expected = {f"media/samples/board/step-{step}/{Path(p).name}": p for step, p in zip((1, 2), images, strict=True)}
    expected[f"media/report/step-2/{Path(htmls[0]).name}"] = htmls[0]
    expected.update({f"media/grid/step-2/{Path(p).name}": p for p in grid})
    assert set(stored) == set(expected)
    for name, rel in expected.items():
        a = stored[name]
        assert (a.kind, a.status, a.size, a.sha256) == ("html" if "report" in name else "image", "ready",
                                                        len(files[rel]), hashlib.sha256(files[rel]).hexdigest())
    image_shas = {hashlib.sha256(files[p]).hexdigest() for p in images + grid}
    assert set(BlobRef.objects.filter(run=run).values_list("sha", flat=True)) == image_shas
    assert run.status == "finished" and run.name == "media-run"

    # The Artifacts tab: every file by key and step, the two images as thumbnails that load as PNG.
    client.force_login(team.viewer)
    page = client.get(f"/p/demo/runs/{run.public_id}/artifacts/?kind=image")
    assert page.status_code == 200
    html = page.content.decode()
    assert all(n in html for n in expected if "report" not in n) and "media/report/" not in html
    thumbs = re.findall(r'<img class="art-thumb" src="([^"]+)"', html)
    assert len(thumbs) == 4
    got = {client.get(t.replace("&amp;", "&")) for t in thumbs}
    assert {(r.status_code, r["Content-Type"]) for r in got} == {(200, "image/png")}
    assert {hashlib.sha256(r.content).hexdigest() for r in got} == image_shas
    # The HTML page downloads as the bytes wandb wrote, never rendered by us.
    html_art = stored[f"media/report/step-2/{Path(htmls[0]).name}"]
    res = client.get(f"/p/demo/runs/{run.public_id}/artifacts/{html_art.pk}/download/", follow=True)
    assert res.status_code == 200 and _body(res) == files[htmls[0]]
    assert res["Content-Type"] == "application/octet-stream"

    # A second import finds every file already there.
    again = do_import(media_run)
    assert not again.problems and again.runs[0].media == 0 and again.runs[0].public_id == run.public_id
    assert Artifact.objects.filter(run=run).count() == 5 and BlobRef.objects.filter(run=run).count() == 4

    client.force_login(team.outsider)
    assert client.get(f"/p/demo/runs/{run.public_id}/artifacts/").status_code == 404
    assert client.get(thumbs[0].replace("&amp;", "&")).status_code == 404


def test_missing_media_file_is_reported_and_the_rest_imports(media_run: Path, do_import: Any, settings: Any,
                                                             tmp_path: Path) -> None:
    settings.DEEPREPO_S3_BUCKET = ""
    import shutil

    copy = tmp_path / media_run.name
    shutil.copytree(media_run, copy)
    gone = sorted((copy / "files" / "media" / "images" / "samples").glob("board_0_*"))[0]
    gone.unlink()
    report = do_import(copy)
    assert len(report.problems) == 1
    message = report.problems[0]["message"]
    assert "history step 1" in message and "samples/board" in message and gone.name in message
    run = Run.objects.get(public_id=report.runs[0].public_id)
    assert sorted(Artifact.objects.filter(run=run).values_list("kind", flat=True)) == ["html"] + ["image"] * 3


def test_media_survive_the_parse_child_process(media_run: Path, do_import: Any, settings: Any) -> None:
    """Big inputs are parsed in a child process that pickles events: the bytes come through whole."""
    settings.DEEPREPO_S3_BUCKET = ""
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 1
    files = _files(media_run)
    report = do_import(media_run)
    assert not report.problems and report.runs[0].media == 5
    run = Run.objects.get(public_id=report.runs[0].public_id)
    assert sorted(Artifact.objects.filter(run=run).values_list("sha256", flat=True)) == sorted(
        hashlib.sha256(b).hexdigest() for b in files.values())


@pytest.mark.django_db(transaction=True)
def test_deeprepo_import_cli_uploads_the_media(media_run: Path, team: Any, settings: Any, live_server: Any,
                                               capsys: Any) -> None:
    from deeprepo_client.cli import main

    settings.DEEPREPO_S3_BUCKET = ""
    files = _files(media_run)
    for _attempt in (1, 2):  # the second run finds every file already there
        assert main(["--url", live_server.url, "--api-key", team.key, "import", str(media_run)]) == 0, \
            capsys.readouterr().err
        assert "5 media files" in capsys.readouterr().out
    run = Run.objects.get(project=team.project, name="media-run")
    stored = dict(Artifact.objects.filter(run=run, status="ready").values_list("name", "sha256"))
    assert sorted(stored.values()) == sorted(hashlib.sha256(b).hexdigest() for b in files.values())
    assert sorted(n.split("/step-")[0] + "/step-" + n.split("/step-")[1].split("/")[0] for n in stored) == [
        "media/grid/step-2", "media/grid/step-2", "media/report/step-2", "media/samples/board/step-1",
        "media/samples/board/step-2"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_artifacts_tab_shows_the_images(media_run: Path, do_import: Any, team: Any, settings: Any,
                                        browser_page: Any, live_server: Any, screenshot_dir: str) -> None:
    settings.DEEPREPO_S3_BUCKET = ""
    run_id = do_import(media_run).runs[0].public_id
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/runs/{run_id}/artifacts/")
    page.wait_for_selector("img.art-thumb")
    # Wait for every thumbnail to finish loading (or failing) before looking at what it decoded to.
    # (polled from here: the page's CSP forbids the string eval that wait_for_function uses)
    for _ in range(100):
        if page.eval_on_selector_all("img.art-thumb", "els => els.every(e => e.complete)"):
            break
        page.wait_for_timeout(100)
    # Both thumbnails decoded (a broken image has naturalWidth 0): the blob view served real PNGs.
    widths = page.eval_on_selector_all("img.art-thumb", "els => els.map(e => e.complete && e.naturalWidth)")
    assert widths == [8, 8, 8, 8]
    assert page.locator("table.art-table tbody tr").count() == 5
    page.screenshot(path=f"{screenshot_dir}/wandb-media-artifacts.png", full_page=True)
    assert page.watched.errors == []


def test_artifact_names_never_escape_media() -> None:
    """A logged key is free text: '..', empty and '.' segments cannot climb out of media/<key>/."""
    from deeprepo_client.formats.wandb_media import artifact_kind, artifact_name

    record: Any = {"key": "../a//./b\\c", "step": 7, "kind": "object3D", "name": "media/object3D/x_7_ab.glb",
                   "data": b""}
    assert artifact_name(record) == "media/_/a/_/_/b/c/step-7/x_7_ab.glb"
    assert artifact_kind(record) == "media"
