from __future__ import annotations

import pytest

from deeprepo_web.analysis.cost import DEFAULT_PRICES, Price, price_for, rollout_cost


def test_family_matching() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == DEFAULT_PRICES["claude-sonnet"]
    assert price_for("anthropic/claude-opus-4.6") == DEFAULT_PRICES["claude-opus"]
    assert price_for("MiniMax M2.5") == DEFAULT_PRICES["minimax-m2"]
    assert price_for("Qwen/Qwen3-30B-A3B-Instruct-2507:t2nj7mvwh0qs5h1szlfekqoh") == DEFAULT_PRICES["qwen3-30b-a3b"]
    # Longest family wins: gpt-4o-mini is not priced as gpt-4o.
    assert price_for("gpt-4o-mini-2024-07-18") == DEFAULT_PRICES["gpt-4o-mini"]
    assert price_for("my-private-model") is None
    assert price_for(None) is None


def test_rollout_cost_split() -> None:
    # Sonnet root: 200k in, 8k out = 0.6 + 0.12; nine M2.5 sub-calls of 5k in / 500 out each.
    subs = [("minimax/minimax-m2.5", 5000, 500)] * 9
    cost = rollout_cost("claude-sonnet-4-5", 200_000, 8_000, subs)
    assert cost.root == pytest.approx(0.72)
    assert cost.sub == pytest.approx(9 * (5000 * 0.2 + 500 * 1.1) / 1e6)
    assert cost.total == pytest.approx(cost.root + cost.sub)
    assert 0 < cost.sub_share < 0.05  # the sub-LLM layer is nearly free (seed 003)
    assert cost.unknown_models == []


def test_custom_prices_and_unknown_models() -> None:
    prices = {"local": Price(0.0, 0.0), "big": Price(1.0, 2.0)}
    cost = rollout_cost("big-model", 1_000_000, 1_000_000, [("local-8b", 10, 10), ("mystery", 5, 5)], prices)
    assert cost.root == pytest.approx(3.0)
    assert cost.sub == 0.0
    assert cost.unknown_models == ["mystery"]
    assert rollout_cost("mystery", None, None).unknown_models == []
