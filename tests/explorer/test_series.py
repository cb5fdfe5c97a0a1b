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


def _ingest(run: Any, values: list[float]) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest

    for start in range(0, len(values), 5000):
        metrics_ingest(run=run, points=[{"step": i, "time": 1e9 + i, "values": {"loss": values[i]}}
                                        for i in range(start, min(len(values), start + 5000))])


def test_zoomed_range_gets_finer_buckets_down_to_raw_points(team: Any) -> None:
    from deeprepo_web.runs.selectors import series_downsampled, series_extremes
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="spiky")
    values = [1.0 + (i % 7) / 100 for i in range(20000)]
    values[12345] = 5.0
    _ingest(run, values)
    whole = series_downsampled(run=run, key="loss", buckets=800)
    assert whole is not None and whole.resolution >= 25 and max(v for v in whole.max if v is not None) == 5.0
    # Zoomed into 2,000 steps: buckets of a few steps, each exact against the raw points.
    part = series_downsampled(run=run, key="loss", buckets=800, start=11500, end=13499)
    assert part is not None and part.resolution < whole.resolution and part.start == 11500 and part.end == 13499
    assert part.steps[0] >= 11500 and part.steps[-1] <= 13499
    for step, lo, hi in zip(part.steps, part.min, part.max, strict=True):
        first = max(11500, 11500 + (step - 11500) // part.resolution * part.resolution)
        bucket = values[first:step + 1]
        assert (lo, hi) == (min(bucket), max(bucket))
    # Narrow enough: every raw point, the spike's among them at its own step.
    raw = series_downsampled(run=run, key="loss", buckets=800, start=12000, end=12700)
    assert raw is not None and raw.resolution == 1 and raw.last[raw.steps.index(12345)] == 5.0
    found = series_extremes(run=run, key="loss", start=12000, end=12999)
    assert found is not None and found["max"] == {"step": 12345, "value": 5.0}


def test_nan_and_infinity_are_listed_with_their_steps(team: Any) -> None:
    from deeprepo_web.runs.selectors import series_downsampled
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="diverged")
    values = [float(i) for i in range(3000)]
    values[100], values[2500], values[2501] = math.nan, math.inf, -math.inf
    _ingest(run, values)
    s = series_downsampled(run=run, key="loss", buckets=50)
    assert s is not None and s.nonfinite == [[100, "NaN"], [2500, "+Inf"], [2501, "-Inf"]]
    assert all(v is None or math.isfinite(v) for v in s.min + s.max + s.last)
    zoomed = series_downsampled(run=run, key="loss", buckets=50, start=2000, end=2999)
    assert zoomed is not None and zoomed.nonfinite == [[2500, "+Inf"], [2501, "-Inf"]]
