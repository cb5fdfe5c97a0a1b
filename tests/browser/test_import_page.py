"""The import page in Chromium: upload a folder's files and a broken file, see runs and problems."""

from __future__ import annotations

import json

import httpx
import pytest
from django.core.management import call_command

from deeprepo_web.importers.models import ImportJob
from tests.importers.conftest import vf_row, write_vf

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_editor_uploads_and_reads_the_report(browser_page, live_server, team, tmp_path, screenshot_dir, samples):
    rows = [json.dumps(vf_row(i, i % 4)) for i in range(12)]
    rows[6] = rows[6][:60] + "<script>alert(1)</script>"
    folder = write_vf(tmp_path / "toy-eval", rows)
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/import/")
    page.set_input_files("input[type=file]", [str(folder / "metadata.json"), str(folder / "results.jsonl")])
    page.click("button[type=submit]")
    # line 7 is broken: the rest imported, and the job says so instead of a green "done"
    page.wait_for_selector(".import-job .status-partial")
    assert "done · 1 problem" in page.inner_text(".import-job .status-partial")
    # a real hosted export as a second import, and a Git LFS pointer as a third
    prime = samples / "prime_hosted_rl" / "bp6qd19u06wzeqkdrf0h24xx"
    page.set_input_files("input[type=file]", [str(p) for p in sorted(prime.iterdir())])
    page.click("button[type=submit]")
    page.wait_for_selector(".import-job .status-done")
    lfs = tmp_path / "results.jsonl"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "b" * 64 + "\nsize 99\n")
    page.set_input_files("input[type=file]", str(lfs))
    page.click("button[type=submit]")
    page.wait_for_selector(".import-job .status-failed")
    body = page.inner_text("body")
    assert "results.jsonl:7" in body and "git lfs pull" in body
    assert "svbench" in body and "8,415" in body  # prime hosted: new metric points
    page.screenshot(path=f"{screenshot_dir}/import.png", full_page=True)
    assert ImportJob.objects.filter(status="done").count() == 2
    assert page.watched.errors == []


def test_viewer_has_no_form(browser_page, live_server, team):
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/import/")
    assert page.locator("input[type=file]").count() == 0


def test_command_line_and_api_imports_are_listed_like_uploads(browser_page, live_server, team, tmp_path,
                                                             screenshot_dir, capsys):
    cli = write_vf(tmp_path / "cli-eval", [vf_row(i, i % 2) for i in range(4)], env="from-cli")
    call_command("import", str(cli), "--project", "demo")
    broken = [json.dumps(vf_row(i, i % 2)) for i in range(4)]
    broken[2] = "{not json"
    api = write_vf(tmp_path / "api-eval", broken, env="from-api")
    with open(api / "results.jsonl", "rb") as results, open(api / "metadata.json", "rb") as meta:
        res = httpx.post(f"{live_server.url}/api/v1/imports", headers={"Authorization": f"Bearer {team.key}"},
                         files=[("files", ("results.jsonl", results)), ("files", ("metadata.json", meta))])
    assert res.status_code == 202, res.text
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/demo/import/")
    page.wait_for_function("document.querySelectorAll('.import-job .status-running, .import-job .status-queued')"
                           ".length == 0")
    jobs = page.locator(".import-job")
    assert jobs.count() == 2
    api_job, cli_job = jobs.nth(0), jobs.nth(1)  # newest first
    assert "command line" in cli_job.inner_text() and str(cli) in cli_job.inner_text()
    assert cli_job.locator(".status-done").count() == 1 and "created" in cli_job.inner_text()
    assert "API" in api_job.inner_text()
    assert api_job.locator(".status-done").count() == 0
    assert "done · 1 problem" in api_job.locator(".status-partial").inner_text()
    assert "results.jsonl:3" in api_job.inner_text()
    page.screenshot(path=f"{screenshot_dir}/import-origins.png", full_page=True)
    assert page.watched.errors == []


def test_the_page_lists_the_registered_formats_and_a_plugin_one(browser_page, live_server, team, tmp_path,
                                                                screenshot_dir):
    from deeprepo_client.formats import Format, Sniff, register, registry

    def parse_nothing(path, **_options):
        return iter(())

    register(Format("tally", "Tally counter files (TALLY v1)", parse_nothing,
                    (Sniff(5, head=lambda path, head: head.startswith(b"TALLY")),)))
    try:
        page = browser_page(team.editor)
        page.goto(f"{live_server.url}/p/demo/import/")
        page.click(".import-formats summary")
        listed = page.locator(".import-formats li").all_inner_texts()
        assert "Tally counter files (TALLY v1)" in listed and "TRL trainer_state.json" in listed
        assert len(listed) == len(registry.labels())
        page.select_option("select[name=format]", "tally")
        assert page.locator("select[name=format] option:checked").inner_text() == "tally: Tally counter files (TALLY v1)"
        page.screenshot(path=f"{screenshot_dir}/import-formats.png", full_page=True)
        assert page.watched.errors == []
    finally:
        registry.unregister("tally")
