"""Shared fixtures: a project with an owner (admin), an editor, a viewer, an outsider, and an API key."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Session fixtures shared by several folders must be defined once, here (a fixture imported into
# two conftests is two fixtures, and would start two of everything: tests/backends and tests/jobs
# each started a Ray head of their own, and on a loaded machine the second timed out starting).
from tests.infra.fixtures import ray_head  # noqa: F401,E402
from tests.jobs.worker import celery_worker  # noqa: F401,E402  (real Celery worker on Redis)

REPO = Path(__file__).resolve().parent.parent

# The MLflow client's telemetry thread sets and unsets an environment variable while other threads
# read os.environ (urllib's proxy lookup iterates it): under load that raced into a KeyError inside
# mlflow's own HTTP call. Tests never report usage anywhere.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def _flush_retrying_deadlocks() -> None:
    """Retry the flush that ends a transactional test when Postgres picks it as a deadlock victim.

    The session's Celery worker runs its beat tasks (job sync, retention, OTLP finish) against the
    test database all the time. TRUNCATE takes its exclusive locks table by table, and a beat query
    that joins two of those tables can hold one and wait for the other: Postgres then aborts one of
    the two. A rolled-back TRUNCATE changed nothing, so taking it again is safe.
    """
    from django.db import OperationalError
    from django.db.backends.postgresql.operations import DatabaseOperations

    original = DatabaseOperations.execute_sql_flush

    def execute_sql_flush(self: Any, sql_list: Any) -> None:
        for attempt in range(6):
            try:
                original(self, sql_list)
                return
            except OperationalError as exc:
                if "deadlock detected" not in str(exc) or attempt == 5:
                    raise
                time.sleep(0.05 * 2 ** attempt)  # let the other transaction finish first

    DatabaseOperations.execute_sql_flush = execute_sql_flush  # type: ignore[method-assign]


_flush_retrying_deadlocks()


def samples_dir() -> Path | None:
    import os

    env = os.environ.get("DEEPREPO_SAMPLES")
    path = Path(env) if env else REPO.parent / "shared" / "samples"
    return path if path.is_dir() else None


@pytest.fixture
def samples() -> Path:
    path = samples_dir()
    if path is None:
        pytest.skip("../shared/samples is absent (set DEEPREPO_SAMPLES to run the real-file tests)")
    return path


@pytest.fixture(autouse=True)
def _fast_test_settings(settings: Any) -> None:
    # Login limits live in the cache: each test starts with an empty one of its own.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                   "LOCATION": f"test-{id(settings)}"}}
    # PBKDF2 costs ~0.5 s per user and `team` makes five; no test here is about hashing.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Per-key request limits are off unless a test turns them on (tests/api/test_rate_limit.py):
    # loads sent by other tests would otherwise share one Redis counter across the session.
    settings.DEEPREPO_RATE_REDIS_URL = ""
    # A report draft's panels are computed within its page (tests/reports/test_reading_cost.py
    # sets this to 0 to see them load on their own, as they do on a busy server).
    settings.DEEPREPO_REPORT_INLINE_MS = 10**9


@dataclass
class Team:
    project: Any
    owner: Any
    editor: Any
    viewer: Any
    outsider: Any
    other_project: Any
    key: str
    other_key: str


@pytest.fixture
def team(db: Any, settings: Any, tmp_path: Path) -> Team:
    from django.contrib.auth.models import User

    from deeprepo_web.accounts.services import api_key_create, membership_set, project_create

    settings.DATA_DIR = tmp_path / "data"
    owner = User.objects.create_user("owner", password="owner-pass-123")
    editor = User.objects.create_user("editor", password="editor-pass-123")
    viewer = User.objects.create_user("viewer", password="viewer-pass-123")
    outsider = User.objects.create_user("outsider", password="outsider-pass-123")
    project = project_create(slug="demo", name="Demo", owner=owner)
    membership_set(project=project, user=editor, role="editor")
    membership_set(project=project, user=viewer, role="viewer")
    other = project_create(slug="other", name="Other", owner=outsider)
    _, key = api_key_create(project=project, user=owner, name="test")
    _, other_key = api_key_create(project=other, user=outsider, name="other")
    return Team(project, owner, editor, viewer, outsider, other, key, other_key)


class Api:
    """A thin JSON client over Django's test client with a Bearer key."""

    def __init__(self, client: Any, key: str | None) -> None:
        self.client = client
        self.key = key

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def post(self, path: str, body: Any, raw: bool = False) -> Any:
        data = body if raw else json.dumps(body)
        return self.client.post(f"/api/v1{path}", data=data, content_type="application/json", headers=self._headers())

    def patch(self, path: str, body: Any) -> Any:
        return self.client.patch(
            f"/api/v1{path}", data=json.dumps(body), content_type="application/json", headers=self._headers()
        )

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/api/v1{path}", params, headers=self._headers())


@pytest.fixture
def api(client: Any, team: Team) -> Api:
    return Api(client, team.key)


@pytest.fixture
def other_api(client: Any, team: Team) -> Api:
    return Api(client, team.other_key)


# Headless Chromium fixtures, shared by every test folder (one browser per session).
from tests.browser_fixtures import browser_page, chromium, screenshot_dir  # noqa: E402, F401

# `make test-fast` leaves out what needs Chromium, kills daemons, or starts a cluster: the markers are
# given here from what a test uses (its fixtures, however indirect, or the faults folder), so a new
# test is sorted without remembering to mark it.
_CLUSTER_FIXTURES = {"slurm_cluster", "sshd_server", "ray_head"}


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    faults = Path(__file__).parent / "faults"
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if "chromium" in names:
            item.add_marker(pytest.mark.browser)
        if names & _CLUSTER_FIXTURES or item.get_closest_marker("slurm") or item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.cluster)
        if faults in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fault)
