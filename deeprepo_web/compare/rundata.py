"""Per-run data of a comparison: the small columns of its rollouts as arrays, costs and behaviour totals.

Reads are bounded: at most MAX_ROLLOUTS small rows per run (a training run contributes its last step
that has rollouts, which is what "after" means for it).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db.models import BooleanField, Case, Max, Value, When
from django.db.models.fields.json import KeyTransform

from deeprepo_web.analysis.behaviour import turn_outliers
from deeprepo_web.analysis.cost import Price
from deeprepo_web.compare import pricing
from deeprepo_web.compare.options import ZeroSpec
from deeprepo_web.runs.models import Rollout, Run, RunKind

MAX_ROLLOUTS = 20_000


@dataclass
class RunData:
    run: Run
    letter: str
    step: int | None
    ids: list[int]
    example_keys: list[str]
    reward: np.ndarray
    turns: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    cost: np.ndarray
    cost_root: np.ndarray
    cost_sub: np.ndarray
    cost_given: int
    unknown_models: list[str]
    error: np.ndarray
    truncated: np.ndarray
    zero: np.ndarray  # 1.0 where the chosen count is 0, 0.0 where not, nan where unknown
    tool_calls: dict[str, float]
    sub_calls: float
    sub_calls_per_batch: float
    repeated_error_max: int
    repeated_error: str
    outlier_ids: list[int]
    capped: bool
    tools_used: tuple[str, ...] = ()  # every tool its rollouts called, most used first

    @property
    def n(self) -> int:
        return len(self.ids)


def _arr(values: list[Any]) -> np.ndarray:
    return np.array([math.nan if v is None else float(v) for v in values], dtype=float)


def _rows(run: Run, zero: ZeroSpec | None) -> tuple[int | None, list[dict[str, Any]], bool]:
    qs = Rollout.objects.filter(run=run)
    step: int | None = None
    if run.kind == RunKind.TRAIN:
        step = qs.aggregate(s=Max("step"))["s"]
        if step is not None:
            qs = qs.filter(step=step)
    fields = ["id", "example_id", "reward", "num_turns", "input_tokens", "output_tokens", "cost",
              "is_truncated", "metrics__behaviour", "has_error"]
    # Error text can be megabytes: Postgres answers "is it empty" without sending it.
    qs = qs.annotate(has_error=Case(When(error="", then=Value(False)), default=Value(True),
                                    output_field=BooleanField()))
    if zero is not None and zero.kind == "metric":
        qs = qs.annotate(zero_m=KeyTransform(zero.names[0], "metrics"),
                         zero_c=KeyTransform(zero.names[0], "reward_components"))
        fields += ["zero_m", "zero_c"]
    rows = list(qs.order_by("id").values(*fields)[: MAX_ROLLOUTS + 1])
    capped = len(rows) > MAX_ROLLOUTS
    rows = rows[:MAX_ROLLOUTS]
    return step, rows, capped


def _zero_value(row: dict[str, Any], behaviour: dict[str, Any] | None, zero: ZeroSpec | None) -> float:
    """1.0 where the zero-X count of this rollout is 0, 0.0 where it is not, nan where it is unknown."""
    if zero is None:
        return math.nan
    if zero.kind == "tool":
        if behaviour is None:
            return math.nan
        calls = behaviour.get("tool_calls") or {}
        return 1.0 if sum(calls.get(n, 0) for n in zero.names) == 0 else 0.0
    v = row.get("zero_m")
    if v is None:
        v = row.get("zero_c")
    if isinstance(v, bool) or not isinstance(v, int | float):
        return math.nan
    return 1.0 if v == 0 else 0.0


class _BehaviourTotals:
    """Sums of the per-rollout behaviour counts (Rollout.metrics["behaviour"]) of one run."""

    def __init__(self, behaviours: list[dict[str, Any] | None]) -> None:
        self.tools: Counter[str] = Counter()
        self.n = self.sub_total = self.batches = self.repeated_max = 0
        self.repeated_text = ""
        for b in behaviours:
            if b is None:
                continue
            self.n += 1
            self.tools.update({k: int(v) for k, v in (b.get("tool_calls") or {}).items()})
            self.sub_total += int(b.get("sub_calls") or 0)
            self.batches += int(b.get("batches") or 0)
            if int(b.get("repeated_error_max") or 0) > self.repeated_max:
                self.repeated_max = int(b["repeated_error_max"])
                self.repeated_text = str(b.get("repeated_error") or "")

    def tool_calls_per_rollout(self) -> dict[str, float]:
        return {k: v / self.n for k, v in self.tools.most_common(6)} if self.n else {}


def run_data(run: Run, letter: str, *, zero: ZeroSpec | None, prices: dict[str, Price]) -> RunData:
    step, rows, capped = _rows(run, zero)
    behaviours = [r["metrics__behaviour"] if isinstance(r["metrics__behaviour"], dict) else None for r in rows]
    costs = [
        pricing.rollout_cost(
            root_model=run.model, input_tokens=r["input_tokens"], output_tokens=r["output_tokens"],
            cost=r["cost"], behaviour=b, prices=prices,
        )
        for r, b in zip(rows, behaviours, strict=True)
    ]
    unknown = sorted({m for c in costs for m in c.unknown_models})
    totals = _BehaviourTotals(behaviours)
    if zero is not None and zero.kind == "tool" and not any(totals.tools.get(n) for n in zero.names):
        # A run that never called the tool has no zero-X rate ("—"), not a rate of 100 %: its
        # environment may not even offer the tool.
        zero_vals = [math.nan] * len(rows)
    else:
        zero_vals = [_zero_value(r, b, zero) for r, b in zip(rows, behaviours, strict=True)]
    turns = [r["num_turns"] for r in rows]
    out_idx = turn_outliers(turns) if rows else []
    return RunData(
        run=run,
        letter=letter,
        step=step,
        ids=[r["id"] for r in rows],
        example_keys=[str(r["example_id"]) for r in rows],
        reward=_arr([r["reward"] for r in rows]),
        turns=_arr(turns),
        input_tokens=_arr([r["input_tokens"] for r in rows]),
        output_tokens=_arr([r["output_tokens"] for r in rows]),
        cost=_arr([c.total for c in costs]),
        cost_root=_arr([c.root for c in costs]),
        cost_sub=_arr([c.sub for c in costs]),
        cost_given=sum(c.given for c in costs),
        unknown_models=unknown,
        error=_arr([r["has_error"] for r in rows]),
        truncated=_arr([r["is_truncated"] for r in rows]),
        zero=_arr(zero_vals),
        tool_calls=totals.tool_calls_per_rollout(),
        sub_calls=totals.sub_total / totals.n if totals.n else math.nan,
        sub_calls_per_batch=totals.sub_total / totals.batches if totals.batches else math.nan,
        repeated_error_max=totals.repeated_max,
        repeated_error=totals.repeated_text,
        outlier_ids=[rows[i]["id"] for i in out_idx],
        capped=capped,
        tools_used=tuple(name for name, _ in totals.tools.most_common()),
    )
