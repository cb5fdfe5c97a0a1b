"""Prices per model for a project (defaults of analysis.cost overridden by ModelPrice rows) and the
cost of a rollout when the importer or client did not record one."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.analysis.cost import DEFAULT_PRICES, Price, price_for
from deeprepo_web.runs.models import ModelPrice


def price_table(*, project: Project) -> dict[str, Price]:
    table = dict(DEFAULT_PRICES)
    for row in ModelPrice.objects.filter(project=project).order_by("model_pattern")[:500]:
        table[row.model_pattern.lower()] = Price(row.input_per_mtok, row.output_per_mtok)
    return table


@dataclass
class RolloutCost:
    root: float | None
    sub: float | None
    given: bool  # the rollout came with its own cost
    unknown_models: list[str] = field(default_factory=list)

    @property
    def total(self) -> float | None:
        if self.root is None or self.sub is None:
            return None  # a part without a price makes the whole unknown, never cheaper than it was
        return self.root + self.sub


def rollout_cost(
    *,
    root_model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    cost: float | None,
    behaviour: Mapping[str, Any] | None,
    prices: Mapping[str, Price],
) -> RolloutCost:
    """Root and sub-LLM parts of a rollout's cost.

    A recorded cost wins; sub-calls that carried their own cost are split off it. Otherwise each
    part is priced from the table; a part whose model has no price is left unknown (None), never
    silently counted as free.
    """
    sub_tokens: Mapping[str, Any] = (behaviour or {}).get("sub_tokens") or {}
    if cost is not None and math.isfinite(cost):
        sub_given = sum(float(v[2]) for v in sub_tokens.values() if len(v) > 3 and v[3])
        sub_given = min(sub_given, cost)
        return RolloutCost(root=cost - sub_given, sub=sub_given, given=True)
    if input_tokens is None and output_tokens is None and not sub_tokens:
        # No cost and no token counts at all: unknown ("—"), not free ("$0").
        return RolloutCost(root=None, sub=None, given=False)
    unknown: list[str] = []
    root: float | None = 0.0
    if input_tokens or output_tokens:
        price = price_for(root_model, prices)
        if price is None:
            root = None
            unknown.append(root_model or "(root model not recorded)")
        else:
            root = price.cost(input_tokens, output_tokens)
    sub: float | None = 0.0
    for model, entry in sub_tokens.items():
        tin, tout, given_cost, n_given = (list(entry) + [0, 0, 0.0, 0])[:4]
        if n_given:
            sub = (sub or 0.0) + float(given_cost)
            continue
        # A sub-call without its own model name ran on the root model (llm_query to itself).
        price = price_for(model or root_model, prices)
        if price is None:
            if tin or tout:
                unknown.append(model or "(sub model not recorded)")
                sub = None
            continue
        if sub is not None:
            sub += price.cost(int(tin), int(tout))
    return RolloutCost(root=root, sub=sub, given=False, unknown_models=unknown)
