"""Token prices per model family and the cost of one rollout split into root and sub-LLM parts.

The table is a default a deployment can override (pass `prices=`): list prices change often and
self-hosted models cost what the cluster costs. Families are matched by substring of the
lower-cased model name, longest match first, so "claude-sonnet-4-5" finds "claude-sonnet" and
"Qwen/Qwen3-30B-A3B-Instruct-2507:lora" finds "qwen3-30b-a3b".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Price:
    input_per_m: float  # USD per million input tokens
    output_per_m: float  # USD per million output tokens

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float:
        return ((input_tokens or 0) * self.input_per_m + (output_tokens or 0) * self.output_per_m) / 1e6


DEFAULT_PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus": Price(15.0, 75.0),
    "claude-sonnet": Price(3.0, 15.0),
    "claude-haiku": Price(1.0, 5.0),
    # OpenAI
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.0),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1": Price(2.0, 8.0),
    "o3": Price(2.0, 8.0),
    # Open-weight models at typical hosted prices
    "minimax-m2": Price(0.20, 1.10),
    "deepseek-v3": Price(0.27, 1.10),
    "deepseek-r1": Price(0.55, 2.19),
    "qwen3-235b": Price(0.20, 0.60),
    "qwen3-30b-a3b": Price(0.10, 0.30),
    "qwen3-8b": Price(0.05, 0.20),
    "llama-3.1-8b": Price(0.05, 0.08),
    "llama-3.3-70b": Price(0.23, 0.40),
    # The numpy demo trainer (workers/demo_grpo.py) uses these model names.
    "toy-softmax-policy": Price(0.20, 0.80),
    "toy-sub-llm": Price(0.20, 1.10),
}


def price_for(model: str | None, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price of the longest family name contained in `model`, or None when unknown."""
    if not model:
        return None
    table = DEFAULT_PRICES if prices is None else prices
    name = model.lower()
    # Normalize separators so "MiniMax M2.5" and "minimax/minimax-m2.5" both match "minimax-m2".
    name = name.replace("_", "-").replace(" ", "-")
    matches = [family for family in table if family in name]
    if not matches:
        return None
    return table[max(matches, key=len)]


@dataclass(frozen=True)
class CostBreakdown:
    root: float
    sub: float
    unknown_models: list[str] = field(default_factory=list)  # priced at 0; show them to the user

    @property
    def total(self) -> float:
        return self.root + self.sub

    @property
    def sub_share(self) -> float:
        return self.sub / self.total if self.total > 0 else 0.0


def rollout_cost(
    root_model: str | None,
    in_tok: int | None,
    out_tok: int | None,
    sub_calls: Iterable[tuple[str | None, int | None, int | None]] = (),
    prices: Mapping[str, Price] | None = None,
) -> CostBreakdown:
    """USD cost of one rollout: the root model's tokens plus every sub-LLM call (model, in, out)."""
    unknown: list[str] = []
    root_price = price_for(root_model, prices)
    root = 0.0
    if root_price is None:
        if in_tok or out_tok:
            unknown.append(root_model or "(unknown root model)")
    else:
        root = root_price.cost(in_tok, out_tok)
    sub = 0.0
    for model, sub_in, sub_out in sub_calls:
        price = price_for(model, prices)
        if price is None:
            label = model or "(unknown sub model)"
            if label not in unknown and (sub_in or sub_out):
                unknown.append(label)
            continue
        sub += price.cost(sub_in, sub_out)
    return CostBreakdown(root=root, sub=sub, unknown_models=unknown)
