"""OTLP runs finish after the project's quiet period (issue 25, item 6): a beat task ends a run that
got no span for that long, the run page says why, the settings page sets the period, and a span
arriving later opens the run again."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from deeprepo_web.otlp.models import OtlpItem
from deeprepo_web.runs.models import Run
from tests.otlp.bodies import agent_trace, body
from tests.otlp.test_ingest import post

pytestmark = pytest.mark.django_db


def _otlp_run(client: Any, team: Any) -> Run:
    assert post(client, team.key, body(agent_trace())).status_code == 200
    return Run.objects.get(project=team.project, source="otlp")


def _age(run: Run, minutes: int) -> None:
    then = timezone.now() - timedelta(minutes=minutes)
    OtlpItem.objects.filter(run=run).update(received_at=then)
    Run.objects.filter(pk=run.pk).update(created_at=then)


def test_a_quiet_otlp_run_finishes_and_says_why(client: Any, team: Any) -> None:
    from workers.tasks.otlp import otlp_runs_close

    client.force_login(team.owner)
    r = client.post(f"/p/{team.project.slug}/settings/otlp/", {"quiet_minutes": "20"})
    assert r.status_code == 302
    assert "20" in client.get(f"/p/{team.project.slug}/settings/").content.decode()
    run = _otlp_run(client, team)
    _age(run, 10)
    assert otlp_runs_close() == 0  # 10 minutes quiet: still running
    assert Run.objects.get(pk=run.pk).status == "running"
    _age(run, 25)
    assert otlp_runs_close() == 1
    run.refresh_from_db()
    assert run.status == "finished" and run.finished_at is not None
    page = client.get(f"/p/{team.project.slug}/runs/{run.public_id}/").content.decode()
    assert "no spans for 20 minutes" in page
    # a span later: the run is live again, and no longer says it ended
    assert post(client, team.key, body(agent_trace("ab" * 16))).status_code == 200
    run.refresh_from_db()
    assert run.status == "running" and run.finished_at is None and "no spans" not in run.notes


def test_the_default_period_and_the_beat_entry(client: Any, team: Any) -> None:
    from workers.tasks.otlp import otlp_runs_close

    entry = django_settings.CELERY_BEAT_SCHEDULE["otlp-close-quiet-runs"]
    assert entry["task"] == "deeprepo.otlp.close_quiet_runs"
    run = _otlp_run(client, team)
    _age(run, 50)
    assert otlp_runs_close() == 0  # the default period is an hour
    _age(run, 70)
    assert otlp_runs_close() == 1


def test_a_bad_period_is_refused_clearly(client: Any, team: Any) -> None:
    client.force_login(team.owner)
    r = client.post(f"/p/{team.project.slug}/settings/otlp/", {"quiet_minutes": "soon"})
    assert r.status_code == 400 and "quiet_minutes" in r.content.decode()
    client.force_login(team.viewer)
    assert client.post(f"/p/{team.project.slug}/settings/otlp/", {"quiet_minutes": "5"}).status_code == 404
