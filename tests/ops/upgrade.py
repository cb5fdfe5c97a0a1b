"""What the upgrade tests share: an earlier release's code unpacked from this repository, its schema
made and filled through its own API in a database of their own (`DB`), and a way to run either
release's code against that database."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DB = os.environ.get("DEEPREPO_TEST_DB", "test_deeprepo") + "_upgrade"
ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"

FILL = """
import django, json
django.setup()
from django.contrib.auth.models import User
from django.test import Client
from deeprepo_web.accounts.services import api_key_create, project_create
owner = User.objects.create_user("owner", password="owner-pass-123")
project = project_create(slug="demo", name="Demo", owner=owner)
_, key = api_key_create(project=project, user=owner, name="k")
c, h = Client(), {"Authorization": "Bearer " + key}
for name in ("before-a", "before-b"):
    rid = c.post("/api/v1/runs", data={"name": name, "environment": "math"}, content_type="application/json",
                 headers=h).json()["id"]
    pts = [{"step": s, "values": {"reward": s / 10}} for s in range(30)]
    assert c.post(f"/api/v1/runs/{rid}/metrics", data={"points": pts}, content_type="application/json",
                  headers=h).status_code == 200
    ro = [{"example_key": f"ex-{i}", "step": i, "reward": i / 4, "turns": [
        {"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}",
         "tool_calls": [{"name": "run", "arguments": {"cmd": "ls"}, "output": "a.py"}]}]} for i in range(5)]
    assert c.post(f"/api/v1/runs/{rid}/rollouts", data={"rollouts": ro}, content_type="application/json",
                  headers=h).status_code == 200
"""


def _env(code: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB}", "PYTHONPATH": str(code),
            "DJANGO_SETTINGS_MODULE": "deeprepo_web.settings", "DEEPREPO_CONN_MAX_AGE": "0", **extra}


def run(args: list[str], code: Path, **extra: str) -> str:
    """`args` run in the release whose code is in `code`, against `DB`; their stdout."""
    done = subprocess.run(args, cwd=code, env=_env(code, **extra), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}: {done.stderr[-3000:]}"
    return done.stdout


def release_filled(commit: str, tmp_path: Path) -> tuple[Path, str]:
    """The release at `commit` unpacked into `tmp_path`, its schema made in `DB` and filled by `FILL`
    through its own API: (its code, the data directory both releases use)."""
    archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
    previous = tmp_path / "previous"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(previous, filter="data")
    data = str(tmp_path / "data")
    run([sys.executable, "manage.py", "migrate", "--no-input"], previous, DEEPREPO_DATA_DIR=data)
    run([sys.executable, "-c", FILL], previous, DEEPREPO_DATA_DIR=data)
    return previous, data
