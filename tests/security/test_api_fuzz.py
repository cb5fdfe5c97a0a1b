"""Schemathesis generates requests from /api/openapi.json: no 500s, and every error is JSON with a message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings

from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.services import run_create
from tests.factories import rollout


@pytest.fixture
def api_schema(transactional_db: Any) -> Iterator[Any]:
    from deeprepo_web.wsgi import application

    # In-process WSGI calls must not close the test's connection (and its transaction) after each
    # request, as a real server would: the same switch Django's test Client makes.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def real_run(team: Any) -> str:
    run, _ = run_create(project=team.project, name="fuzzed")
    rollouts_ingest(run=run, rollouts=[rollout("ex-1")])
    return run.public_id


def test_api_answers_every_generated_request_without_a_500(api_schema: Any, team: Any, real_run: str) -> None:
    headers = {"Authorization": f"Bearer {team.key}"}
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 8

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
        def check(case: Any) -> None:
            if case.path_parameters and "run_id" in case.path_parameters and hash(repr(case.body)) % 2 == 0:
                case.path_parameters["run_id"] = real_run  # half the time, aim at a run that exists
            response = case.call(headers=headers)
            where = f"{case.method} {case.formatted_path} body={str(case.body)[:120]}"
            if response.status_code >= 500:
                failures.append(f"{where}: {response.status_code} {response.text[:200]}")
            elif response.status_code >= 400:
                body = response.json()
                if not (isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]):
                    failures.append(f"{where}: error without a message: {body}")

        check()
    assert failures == []
