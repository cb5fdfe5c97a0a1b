"""series?after=STEP: the raw points a live chart appends, of one key or every key, bounded per key."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_after_returns_only_newer_points(api: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="r")
    metrics_ingest(run=run, points=[{"step": i, "time": 100.0 + i, "values": {"reward": i / 10, "loss": -i}}
                                    for i in range(10)])
    metrics_ingest(run=run, points=[{"step": 3, "values": {"old": 1.0}}])
    one = api.get(f"/runs/{run.public_id}/series", key="reward", after=7).json()
    assert one["points"] == {"reward": {"step": [8, 9], "time": [108.0, 109.0], "value": [0.8, 0.9]}}
    every = api.get(f"/runs/{run.public_id}/series", after=8).json()
    assert set(every["points"]) == {"reward", "loss"}  # "old" ends at step 3: not read
    assert every["points"]["loss"]["value"] == [-9.0] and every["truncated"] == []
    assert api.get(f"/runs/{run.public_id}/series", after=9).json()["points"] == {}


def test_after_is_bounded_and_says_so(team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.selectors import series_after
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="r")
    metrics_ingest(run=run, points=[{"step": i, "values": {"reward": 1.0}} for i in range(50)])
    out = series_after(run=run, after=-1, limit=20)
    assert out["points"]["reward"]["step"] == list(range(20)) and out["truncated"] == ["reward"]


def test_after_needs_read_access(other_api: Any, team: Any) -> None:
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="r")
    assert other_api.get(f"/runs/{run.public_id}/series", after=0).status_code == 404
