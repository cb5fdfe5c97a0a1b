"""POST /api/v1/imports + GET /api/v1/imports/{id}, and `manage.py import`."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from deeprepo_web.accounts.services import api_key_create
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.runs.models import Rollout, Run

from .conftest import vf_row, write_vf


def _upload(client, key, files, **data):
    return client.post("/api/v1/imports", {"files": files, **data}, headers={"Authorization": f"Bearer {key}"})


def _file(tmp_path, n=3):
    folder = write_vf(tmp_path / "up", [vf_row(i, i) for i in range(n)])
    return open(folder / "results.jsonl", "rb")


def test_api_upload_then_status(client, team, tmp_path, django_capture_on_commit_callbacks):
    with _file(tmp_path) as f, django_capture_on_commit_callbacks(execute=True):
        res = _upload(client, team.key, f)
    assert res.status_code == 202, res.content
    job_id = res.json()["id"]
    status = client.get(f"/api/v1/imports/{job_id}", headers={"Authorization": f"Bearer {team.key}"}).json()
    assert status["status"] == "done" and status["report"]["runs"][0]["rollouts"] == 3
    assert Run.objects.filter(public_id=status["report"]["runs"][0]["public_id"], project=team.project).exists()
    # a logged-in member can read it too
    client.force_login(team.viewer)
    assert client.get(f"/api/v1/imports/{job_id}").json()["status"] == "done"


def test_api_other_project_key_gets_404(client, team, tmp_path, django_capture_on_commit_callbacks):
    with _file(tmp_path) as f, django_capture_on_commit_callbacks(execute=True):
        job_id = _upload(client, team.key, f).json()["id"]
    res = client.get(f"/api/v1/imports/{job_id}", headers={"Authorization": f"Bearer {team.other_key}"})
    assert res.status_code == 404 and res.json() == {"error": "not found"}
    client.force_login(team.outsider)
    assert client.get(f"/api/v1/imports/{job_id}").status_code == 404


def test_api_read_only_key_cannot_import(client, team, tmp_path):
    _, read_key = api_key_create(project=team.project, user=team.owner, name="ro", scopes=["read"])
    with _file(tmp_path) as f:
        res = _upload(client, read_key, f)
    assert res.status_code == 403 and res.json() == {"error": "this API key may not write"}
    assert ImportJob.objects.count() == 0


def test_api_without_key_is_401(client, team, tmp_path):
    with _file(tmp_path) as f:
        res = client.post("/api/v1/imports", {"files": f})
    assert res.status_code == 401 and "error" in res.json()


def test_api_unknown_format_name_is_422(client, team, tmp_path):
    with _file(tmp_path) as f:
        res = _upload(client, team.key, f, format="excel")
    assert res.status_code == 422 and res.json()["error"].startswith("format: 'excel' is not one of")


def test_command_prints_one_line_per_run(team, tmp_path, capsys):
    rows = [json.dumps(vf_row(i, i)) for i in range(4)]
    rows[1] = "{bad"
    folder = write_vf(tmp_path / "toy-run", rows)
    call_command("import", str(folder), "--project", "demo")
    out, err = capsys.readouterr()
    run = Run.objects.get()
    assert out.strip() == f"created run toy-run (3 rollouts, 0 points): {run.public_id}"
    assert f"{folder / 'results.jsonl'}:2: invalid JSON" in err
    call_command("import", str(folder), "--project", "demo")
    out, _ = capsys.readouterr()
    assert out.strip() == f"updated run toy-run (0 rollouts, 0 points, 3 already there): {run.public_id}"
    assert Rollout.objects.count() == 3


def test_command_fails_when_nothing_imports(team, tmp_path, capsys):
    f = tmp_path / "x.txt"
    f.write_text("nothing to see")
    with pytest.raises(CommandError, match="nothing was imported") as exc:
        call_command("import", str(f), "--project", "demo")
    assert exc.value.returncode == 1
    assert "unknown format" in capsys.readouterr().err


def test_command_unknown_project(team, tmp_path):
    with pytest.raises(CommandError, match="no project with slug 'nope'"):
        call_command("import", str(tmp_path), "--project", "nope")


def test_command_forced_format(team, tmp_path, capsys):
    folder = write_vf(tmp_path / "forced", [vf_row(0, 0)])
    call_command("import", str(folder / "results.jsonl"), "--project", "demo", "--format", "verifiers")
    assert Rollout.objects.count() == 1
