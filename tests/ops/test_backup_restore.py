"""Backup and restore: fill an install (runs, metrics, rollouts whose bodies live in the blob store),
`manage.py backup DIR`, restore into an empty database and an empty store with `manage.py restore
DIR`, and the pages read the same. Once with the filesystem store, once with S3 (rclone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from deeprepo_web import storage
from deeprepo_web.ops.backup import BackupError, backup_restore
from deeprepo_web.runs.models import BlobRef, Run
from tests.factories import rollout
from tests.infra.fixtures import s3_server  # noqa: F401
from tests.infra.s3 import S3Server

pytestmark = pytest.mark.django_db(transaction=True)
REPO = Path(__file__).resolve().parents[2]
RESTORED = os.environ.get("DEEPREPO_TEST_DB", "test_deeprepo") + "_restored"
ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"


@pytest.fixture
def empty_database():
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{RESTORED}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{RESTORED}"')
    yield f"postgres://postgres@127.0.0.1:5432/{RESTORED}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{RESTORED}" WITH (FORCE)')


def _fill(api, settings) -> None:
    settings.DEEPREPO_BLOB_THRESHOLD = 64  # every long body goes to the blob store
    for name in ("grpo-a", "grpo-b"):
        run_id = api.post("/runs", {"name": name, "environment": "math"}).json()["id"]
        points = [{"step": s, "values": {"reward": s / 10, "loss": 1 - s / 10}} for s in range(40)]
        assert api.post(f"/runs/{run_id}/metrics", {"points": points}).status_code == 200
        rollouts = [rollout(f"ex-{i}", reward=i / 4, step=i % 3) for i in range(6)]
        for i, r in enumerate(rollouts):
            r["turns"][1]["content"] = f"{name} long answer {i}: " + "the file reads user input into SQL. " * 20
        assert api.post(f"/runs/{run_id}/rollouts", {"rollouts": rollouts}).status_code == 200


def _pages(env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-m", "tests.ops.page_numbers", "demo"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env(database_url: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "deeprepo_web.settings",
           "DEEPREPO_CONN_MAX_AGE": "0", **extra}
    return env


def _roundtrip(api, settings, tmp_path, store_env: dict[str, str], restored_store_env: dict[str, str],
               empty_database: str) -> dict[str, str]:
    _fill(api, settings)
    assert BlobRef.objects.count() > 0
    before = _pages(_env(f"postgres://postgres@127.0.0.1:5432/{connection.settings_dict['NAME']}", **store_env))
    call_command("backup", str(tmp_path / "backup"))
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert manifest["objects"] >= BlobRef.objects.values("sha").distinct().count() and manifest["missing"] == []
    restore = subprocess.run([sys.executable, "manage.py", "restore", str(tmp_path / "backup")], cwd=REPO,
                             env=_env(empty_database, **restored_store_env), capture_output=True, text=True,
                             timeout=300)
    assert restore.returncode == 0, restore.stderr[-3000:]
    with psycopg.connect(empty_database) as conn:  # the database's own settings, which a dump does not hold
        assert conn.execute("SHOW jit").fetchone()[0] == "off"
    after = _pages(_env(empty_database, **restored_store_env))
    assert sorted(after) == sorted(before) and len(before) == 1 + 2 * 2 + 2 * 3
    for page, text in before.items():
        assert after[page] == text, page
    assert "grpo-a" in before["project"] and all(v.startswith("200 ") for k, v in before.items() if k.count("/") == 1
                                                 and not k.endswith("rollouts"))
    return manifest


def test_filesystem_store(api, settings, tmp_path, empty_database):
    data = tmp_path / "data"
    settings.DATA_DIR = data
    _roundtrip(api, settings, tmp_path, {"DEEPREPO_DATA_DIR": str(data), "DEEPREPO_S3_BUCKET": ""},
               {"DEEPREPO_DATA_DIR": str(tmp_path / "restored-data"), "DEEPREPO_S3_BUCKET": ""}, empty_database)
    assert sorted(storage.FilesystemBackend(tmp_path / "restored-data" / "objects").keys()) == \
        sorted(storage.FilesystemBackend(data / "objects").keys())


def test_s3_store(api, settings, tmp_path, empty_database, s3_server: S3Server, monkeypatch):  # noqa: F811
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    s3_server.client().create_bucket(Bucket="restored")
    settings.DEEPREPO_S3_BUCKET, settings.DEEPREPO_S3_ENDPOINT_URL = "deeprepo-test", s3_server.endpoint
    s3 = {**s3_server.env(), "DEEPREPO_S3_ENDPOINT_URL": s3_server.endpoint}
    _roundtrip(api, settings, tmp_path, {**s3, "DEEPREPO_S3_BUCKET": "deeprepo-test"},
               {**s3, "DEEPREPO_S3_BUCKET": "restored"}, empty_database)
    listed = [o["Key"] for p in s3_server.client().get_paginator("list_objects_v2").paginate(Bucket="restored")
              for o in p.get("Contents", [])]
    assert sorted(listed) == sorted(s3_server.keys())


def test_restore_refuses_a_database_in_use(api, settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    _fill(api, settings)
    call_command("backup", str(tmp_path / "b"))
    with pytest.raises(BackupError, match="not empty"):
        backup_restore(tmp_path / "b")
    with pytest.raises(Exception, match="new or empty folder"):
        call_command("backup", str(tmp_path / "b"))
    (tmp_path / "b" / "db.dump").write_bytes(b"tampered")
    with pytest.raises(BackupError, match="sha256 differs"):
        backup_restore(tmp_path / "b")
    assert Run.objects.count() == 2
