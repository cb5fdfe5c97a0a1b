"""The curves of a comparison: which metric to draw first, which runs have it, and the downsampled
points themselves for pages that cannot call the API (a shared comparison is public)."""

from __future__ import annotations

from typing import Any

from deeprepo_web.compare.comparison import Comparison
from deeprepo_web.explorer.evalsummary import is_curve
from deeprepo_web.explorer.selectors import REWARD_KEYS
from deeprepo_web.runs import selectors
from deeprepo_web.runs.models import MetricSeries

MAX_KEYS = 500
EMBED_BUCKETS = 400


def curve_keys(c: Comparison) -> dict[str, list[str]]:
    """Metric keys per run (public id) that make a curve, so a page asks only for series a run has.
    A one-point metric (an eval's score) is a number, not a curve: runs with only those get no panel."""
    out = {}
    for d in c.runs:
        rows = MetricSeries.objects.filter(run=d.run).order_by("key").values("key", "count", "min_value")
        out[d.run.public_id] = [s["key"] for s in rows if is_curve(s)][:MAX_KEYS]
    return out


def first_key(keys: list[str]) -> str:
    """The reward if a run logged one under a usual name, else the first key."""
    for k in REWARD_KEYS:
        if k in keys:
            return k
    return keys[0] if keys else ""


def curves_embed(c: Comparison, per_run: dict[str, list[str]], key: str) -> dict[str, Any]:
    """`key`'s downsampled series of every run that has it (None for the others)."""
    runs: list[dict[str, Any] | None] = []
    for d in c.runs:
        s = selectors.series_downsampled(run=d.run, key=key, buckets=EMBED_BUCKETS) \
            if key in per_run.get(d.run.public_id, []) else None
        runs.append({"step": s.steps, "value": s.last} if s is not None and s.steps else None)
    return {"key": key, "runs": runs}
