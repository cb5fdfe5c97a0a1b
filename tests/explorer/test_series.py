"""The downsampled series the charts read: per-bucket min / max / last agree with the raw points."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_rollup_buckets_match_raw_points(team: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.selectors import series_downsampled
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="long")
    values = [math.sin(i / 50) + (5.0 if i == 1234 else 0.0) for i in range(6000)]
    for start in range(0, 6000, 2000):
        metrics_ingest(run=run, points=[{"step": i, "time": 1e9 + i, "values": {"reward": values[i]}}
                                        for i in range(start, start + 2000)])
    s = series_downsampled(run=run, key="reward", buckets=100)
    assert s is not None and s.count == 6000 and len(s.steps) <= 100
    width = s.resolution
    for step, lo, hi, last, t in zip(s.steps, s.min, s.max, s.last, s.times, strict=True):
        bucket = [values[i] for i in range(step // width * width, step + 1)]
        assert lo == pytest.approx(min(bucket)) and hi == pytest.approx(max(bucket))
        assert last == pytest.approx(values[step]) and t == pytest.approx(1e9 + step)
    assert max(v for v in s.max if v is not None) == pytest.approx(values[1234])  # the spike survives
