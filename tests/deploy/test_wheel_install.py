"""Installed like MLflow or Phoenix: the wheels `uv build` makes, installed into a fresh venv outside
the checkout, and `deeprepo-web server` there serves the login page with its static files, on the
same embedded stack as `make run` (Postgres in the data dir, migrations, worker, beat, web)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from bench.common import free_port
from tests.conftest import REPO
from tests.deploy.test_make_run import _postgres_of, _stop, _sweep, _wait_login, scratch  # noqa: F401


def _build(dist: Path) -> tuple[Path, Path]:
    # The root project (deeprepo-web) is built without --package: uv takes `package = false` as "no build".
    for which in ([], ["--package", "deeprepo-client"]):
        done = subprocess.run(["uv", "build", "--wheel", *which, "--out-dir", str(dist)],
                              cwd=REPO, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    web = next(dist.glob("deeprepo_web-*.whl"))
    return web, next(dist.glob("deeprepo_client-*.whl"))


def test_wheel_carries_templates_static_files_and_migrations_and_serves_login(scratch: Path) -> None:  # noqa: F811
    if shutil.which("uv") is None:
        pytest.fail("uv is needed (pip install uv)")
    web, client = _build(scratch / "dist")
    names = set(zipfile.ZipFile(web).namelist())
    for wanted in ("deeprepo_web/templates/front/login.html", "deeprepo_web/static/app.css",
                   "deeprepo_web/sso/migrations/0001_sso_identity.py", "deeprepo_web/cli.py",
                   "workers/celery.py", "workers/demo_grpo.py"):
        assert wanted in names, f"{wanted} is not in {web.name}"
    assert not any(n.startswith(("tests/", "templates/")) for n in names)

    venv = scratch / "venv"
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    made = subprocess.run(["uv", "venv", "--python", python, str(venv)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    installed = subprocess.run(["uv", "pip", "install", "--python", str(venv / "bin" / "python"), str(web), str(client)],
                               cwd=scratch, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    port, data = free_port(), scratch / "data"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DATABASE_URL", "VIRTUAL_ENV", "UV_", "DJANGO_", "CELERY_", "DEEPREPO_",
                                "PYTEST", "PYTHONPATH"))}
    log = scratch / "server.log"
    # Run from a folder outside the checkout: nothing may come from the repository's files.
    proc = subprocess.Popen([str(venv / "bin" / "deeprepo-web"), "server", "--port", str(port), "--data-dir", str(data)],
                            cwd=scratch, env=env, start_new_session=True, stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT)
    try:
        _wait_login(f"http://127.0.0.1:{port}/login/", log, proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/app.css", timeout=10) as res:
            assert res.status == 200 and b".topbar" in res.read()
        text = log.read_text()
        assert "database: postgresql://" in text, text
        assert (data / "pg").is_dir() and str(REPO) not in text
    finally:
        _stop(proc)
        postgres_left = _postgres_of(data)
        _sweep(scratch)
    assert not postgres_left, "deeprepo-web server left its Postgres running"
    assert proc.returncode == 0, log.read_text()[-3000:]
