"""A metrics batch with a few bad keys (empty, or longer than the limit) keeps its good ones.

Refusing the whole batch for one key would lose every good value of those steps; instead the bad
keys are left out, the rest is stored, and each left-out key is named (in the answer, on the run
page's refusals banner, in an import's report). The check costs nothing on a good batch: the fold
raises BadKeys before writing, and only then is the batch split.
"""

from __future__ import annotations

from typing import Any

from deeprepo_web.runs.ingest.fold import BAD_KEY, BadKeys, bad_key
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.models import Run

KEY_SHOWN = 100  # characters of a refused key sent back and shown (the rest is its length)


def _split(points: list[dict[str, Any]], keys: set[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    good: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for i, p in enumerate(points):
        values = p["values"]
        left = [k for k in values if k in keys]
        if not left:
            good.append(p)
            continue
        for k in left:
            refused.append({"point": i, "step": p["step"], "key": k[:KEY_SHOWN], "length": len(k), "error": BAD_KEY})
        kept = {k: v for k, v in values.items() if k not in keys}
        if kept:
            good.append({**p, "values": kept})
    return good, refused


def refusal_line(refused: list[dict[str, Any]]) -> str:
    """One line per batch for the run page: the first bad key, how long it is, at which steps."""
    first = refused[0]
    steps = sorted({r["step"] for r in refused})
    key = first["key"] + ("…" if first["length"] > len(first["key"]) else "")
    where = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}–{steps[-1]}"
    more = len({(r["key"], r["length"]) for r in refused}) - 1
    return (f"metric key {key!r} ({first['length']} characters) refused at {where}"
            + (f", and {more} more key{'s' if more > 1 else ''}" if more else "")
            + f": {BAD_KEY}; the batch's other keys were stored")


def metrics_ingest_good(*, run: Run, points: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Store the batch's good keys; returns (values stored, the refused keys with their point and step)."""
    try:
        return metrics_ingest(run=run, points=points), []
    except BadKeys as exc:
        good, refused = _split(points, {k for k in exc.keys if bad_key(k)})
    stored = metrics_ingest(run=run, points=good) if good else 0
    return stored, refused
