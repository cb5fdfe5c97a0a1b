from __future__ import annotations

import pytest

from deeprepo_web.analysis.cost import Price
from deeprepo_web.compare.pricing import rollout_cost

PRICES = {"big": Price(1.0, 2.0)}


def test_tokens_of_an_unpriced_model_make_the_cost_unknown_not_free() -> None:
    # Tokens are known, the root model has no price, no sub-calls: "—" on the page, never "$0.0000".
    cost = rollout_cost(root_model="", input_tokens=1000, output_tokens=200, cost=None, behaviour=None,
                        prices=PRICES)
    assert cost.total is None
    assert cost.unknown_models == ["(root model not recorded)"]


def test_an_unpriced_sub_model_makes_the_whole_cost_unknown() -> None:
    behaviour = {"sub_tokens": {"mystery": [10, 10, 0.0, 0]}}
    cost = rollout_cost(root_model="big", input_tokens=1_000_000, output_tokens=0, cost=None,
                        behaviour=behaviour, prices=PRICES)
    assert cost.root == pytest.approx(1.0)
    assert cost.total is None  # part of it has no price: the sum would understate it


def test_priced_parts_add_up() -> None:
    behaviour = {"sub_tokens": {"big": [1_000_000, 0, 0.0, 0]}}
    cost = rollout_cost(root_model="big", input_tokens=0, output_tokens=1_000_000, cost=None,
                        behaviour=behaviour, prices=PRICES)
    assert cost.total == pytest.approx(3.0)
