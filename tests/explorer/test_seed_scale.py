"""seed_scale writes a consistent project: counts, ids, rollups the series endpoint can read, pages render."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_small_seed_is_consistent(client: Any) -> None:
    from deeprepo_web.explorer.health import grpo_health
    from deeprepo_web.runs.models import MetricSeries, Rollout, Run, ToolCall, Turn
    from deeprepo_web.runs.selectors import series_downsampled

    out = StringIO()
    call_command("seed_scale", rollouts=500, runs=4, long_points=5000, metric_steps=40, project="tiny", stdout=out)
    runs = Run.objects.filter(project__slug="tiny")
    assert runs.count() == 5  # 4 + the long-series run
    assert Rollout.objects.filter(run__project__slug="tiny").count() == 500
    turns = Turn.objects.filter(rollout__run__project__slug="tiny")
    assert turns.count() > 500 * 4
    # Every turn and call points at a rollout that exists (FK triggers were off during COPY).
    assert not Turn.objects.exclude(rollout__in=Rollout.objects.all()).exists()
    assert ToolCall.objects.filter(rollout__run__project__slug="tiny").exclude(turn__in=turns).count() == 0
    assert ToolCall.objects.filter(rollout__run__project__slug="tiny").count() > 0
    long = runs.get(name="long-series")
    s = series_downsampled(run=long, key="reward", buckets=100)
    assert s is not None and s.count == 5000 and 50 <= len(s.steps) <= 100
    assert MetricSeries.objects.get(run=long, key="reward").last_step == 4999
    train = runs.filter(kind="train").exclude(name="long-series").first()
    assert train is not None and grpo_health(run=train).step
    # Later inserts through the ORM get fresh ids (the sequences were moved past the COPY'd rows).
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from tests.factories import rollout

    assert rollouts_ingest(run=train, rollouts=[rollout("new", uid="after-seed")]) == 1
    client.login(username="tiny-owner", password="scale-pass-123")
    assert client.get("/p/tiny/").status_code == 200
    with pytest.raises(Exception, match="exists"):
        call_command("seed_scale", rollouts=10, project="tiny", stdout=out)
