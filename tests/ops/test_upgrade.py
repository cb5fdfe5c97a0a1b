"""Upgrade: the previous release's code (git commit PREVIOUS, unpacked from this repository) makes
its schema and fills it through its own API; today's `migrate` upgrades that database, and
today's pages read what the previous release's pages read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

import psycopg
import pytest

REPO = Path(__file__).resolve().parents[2]
PREVIOUS = "f796ccf"  # the release before audit, retention and ops; move it forward at each release
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


def _run(args: list[str], code: Path, **extra: str) -> str:
    done = subprocess.run(args, cwd=code, env=_env(code, **extra), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}: {done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture
def upgrade_db():
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB}"')
    yield
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')


def test_previous_release_database_upgrades(tmp_path, upgrade_db):
    archive = subprocess.run(["git", "archive", PREVIOUS], cwd=REPO, capture_output=True, check=True).stdout
    previous = tmp_path / "previous"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(previous, filter="data")
    data = str(tmp_path / "data")
    _run([sys.executable, "manage.py", "migrate", "--no-input"], previous, DEEPREPO_DATA_DIR=data)
    _run([sys.executable, "-c", FILL], previous, DEEPREPO_DATA_DIR=data)
    pages = [sys.executable, str(REPO / "tests" / "ops" / "page_numbers.py"), "demo"]
    before = json.loads(_run(pages, previous, DEEPREPO_DATA_DIR=data).strip().splitlines()[-1])

    out = _run([sys.executable, "manage.py", "migrate", "--no-input"], REPO, DEEPREPO_DATA_DIR=data)
    assert "Applying" in out  # today's release has migrations the previous one had not
    after = json.loads(_run(pages, REPO, DEEPREPO_DATA_DIR=data).strip().splitlines()[-1])
    assert sorted(after) == sorted(before) and len(before) == 1 + 2 * 2 + 2 * 3
    # Menus and panels may be added between releases; every number a page showed is still shown, in order.
    for page, text in before.items():
        # Lists page by cursor now, with no page numbers, and a single page shows no pager: the old
        # pagers' "Page 1 · 2 runs" and "page 1" are the texts that went on purpose.
        text = re.sub(r"(← Previous )?\b[Pp]age \d+( · \d+ (run|rollout)s?)?( Next →)?", "", text)
        shown = iter(re.findall(r"\d+(?:\.\d+)?", after[page]))
        assert all(n in shown for n in re.findall(r"\d+(?:\.\d+)?", text)), page
    assert "before-a" in after["project"] and "before-b" in after["project"]
    # The pages that came with the upgrade work on the old data too.
    check = ("from django.test import Client; from django.contrib.auth.models import User; c = Client(); "
             "c.force_login(User.objects.get(username='owner')); "
             "print(c.get('/p/demo/settings/').status_code, c.get('/p/demo/settings/audit/').status_code)")
    shown = _run([sys.executable, "manage.py", "shell", "-c", check], REPO, DEEPREPO_DATA_DIR=data)
    assert shown.strip().splitlines()[-1].split() == ["200", "200"]
