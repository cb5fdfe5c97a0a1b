"""Every format the registry reads is named where a new user looks: the upload page, `deeprepo import
--help` and the "unknown format" answer; a zip cut short is reported as a corrupt zip, not as
"binary data starting PK…"."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile

import pytest

from deeprepo_client.formats import parse, registry
from deeprepo_client.records import Problem

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# The families a user comes from; each must be among the registry's labels.
FAMILIES = ["W&B", "MLflow", "Trackio", "TensorBoard", "verl", "SkyRL", "ART", "AReaL", "rLLM", "verifiers",
            "Inspect", "SWE-bench", "TRL", "prime-rl"]


def _cut_zip(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("results.jsonl", "".join(f'{{"prompt": "p{i}", "completion": "c", "reward": 1}}\n'
                                            for i in range(3000)))
        z.writestr("metadata.json", '{"env": "toy"}')
    path = tmp_path / "eval-folder.zip"
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])  # an upload that stopped half way
    return path


def test_the_registry_names_every_family():
    labels = " ".join(registry.labels())
    assert [f for f in FAMILIES if f not in labels] == []


def test_help_and_unknown_answer_name_every_format(tmp_path):
    out = subprocess.run([sys.executable, "-m", "deeprepo_client.cli", "import", "--help"],
                         capture_output=True, text=True, check=True).stdout
    unknown = tmp_path / "notes.bin"
    unknown.write_bytes(b"\x00\x01 some binary thing")
    [problem] = [e for e in parse(unknown) if isinstance(e, Problem)]
    for label in registry.labels():
        assert label in out, label
        assert label in problem.message, label


def test_a_cut_zip_is_a_corrupt_zip(tmp_path):
    [problem] = [e for e in parse(_cut_zip(tmp_path)) if isinstance(e, Problem)]
    assert problem.fatal and problem.message.startswith("corrupt zip:")
    assert "binary data" not in problem.message and "cut short" in problem.message


def test_upload_page_names_the_formats_and_reports_a_corrupt_zip(browser_page, live_server, team, tmp_path,
                                                                  screenshot_dir):
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/import/")
    page.click(".import-formats summary")
    listed = page.inner_text(".import-formats")
    assert [label for label in registry.labels() if label not in listed] == []
    page.set_input_files("input[type=file]", str(_cut_zip(tmp_path)))
    page.click("button[type=submit]")
    page.wait_for_selector(".import-job .status-failed")
    body = page.inner_text(".import-jobs")
    page.screenshot(path=f"{screenshot_dir}/import-corrupt-zip.png", full_page=True)
    assert "corrupt zip" in body and "binary data starting" not in body
    assert page.watched.errors == []
