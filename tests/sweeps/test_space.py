"""The sweep form's space: lists, ranges, and spaces refused with their count."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.jobs.params import validate_schema
from deeprepo_web.sweeps.errors import SweepInputError
from deeprepo_web.sweeps.models import Sweep
from deeprepo_web.sweeps.services import sweep_create
from deeprepo_web.sweeps.space import parse_spec, space_parse
from tests.jobs.conftest import builtin

LR, STEPS, MODE = validate_schema([
    {"name": "lr", "type": "float", "min": 1e-6, "max": 10},
    {"name": "steps", "type": "int", "min": 1, "max": 10000},
    {"name": "mode", "type": "choice", "choices": ["a", "b", "c"]},
])


def test_lists_ranges_and_every_choice() -> None:
    assert parse_spec(LR, "0.1, 0.3,0.1") == {"values": [0.1, 0.3]}
    assert parse_spec(LR, "1e-4 .. 0.3 log") == {"low": 1e-4, "high": 0.3, "log": True, "int": False}
    assert parse_spec(STEPS, "1..8") == {"low": 1, "high": 8, "log": False, "int": True}
    assert parse_spec(MODE, "*") == {"values": ["a", "b", "c"]}
    assert parse_spec(LR, "  ") is None


@pytest.mark.parametrize(("param", "text", "says"), [
    (LR, "0.5 .. 0.1", "the range 0.5 .. 0.1 is empty"),
    (LR, "0 .. 1 log", "must be ≥"),
    (LR, "0.1, 99", "must be ≤ 10"),
    (MODE, "a, z", "'z' is not one of a, b, c"),
    (LR, "0.1,,0.2", "an empty value"),
    (STEPS, "*", "choice and bool parameters only"),
])
def test_bad_lines_say_what_is_wrong(param: dict[str, Any], text: str, says: str) -> None:
    with pytest.raises(SweepInputError) as e:
        parse_spec(param, text)
    assert says in e.value.message
    assert e.value.field == param["name"]


def test_unknown_parameter_is_named() -> None:
    with pytest.raises(SweepInputError, match="nope: is not a parameter"):
        space_parse([LR], {"nope": "1, 2"})


@pytest.mark.django_db
def test_empty_space_is_refused_with_its_count(team: Any, local_cluster: Any) -> None:
    with pytest.raises(SweepInputError) as e:
        sweep_create(project=team.project, template=builtin("demo-grpo"), cluster=local_cluster, specs={},
                     method="random", metric="reward", max_trials=5, max_parallel=2)
    assert "empty (0 combinations)" in e.value.message
    assert not Sweep.objects.exists()


@pytest.mark.django_db
def test_huge_grid_is_refused_with_its_count(team: Any, local_cluster: Any) -> None:
    with pytest.raises(SweepInputError) as e:
        sweep_create(project=team.project, template=builtin("demo-grpo"), cluster=local_cluster,
                     specs={"steps": "1 .. 100", "seed": "0 .. 999"}, method="grid", metric="reward",
                     max_trials=50, max_parallel=2)
    assert "the grid has 100,000 combinations; at most 10,000" in e.value.message
    # The same space sampled, not enumerated, is fine.
    sweep = sweep_create(project=team.project, template=builtin("demo-grpo"), cluster=local_cluster,
                         specs={"steps": "1 .. 100", "seed": "0 .. 999"}, method="random", metric="reward",
                         max_trials=50, max_parallel=2)
    assert sweep.max_trials == 50


@pytest.mark.django_db
def test_float_range_in_a_grid_and_too_many_trials_are_refused(team: Any, local_cluster: Any) -> None:
    common = {"project": team.project, "template": builtin("demo-grpo"), "cluster": local_cluster,
              "metric": "reward", "max_parallel": 2}
    with pytest.raises(SweepInputError, match="a grid needs a list of values"):
        sweep_create(specs={"lr": "0.01 .. 0.1"}, method="grid", max_trials=5, **common)
    with pytest.raises(SweepInputError, match="between 1 and 1,000, got 5,000"):
        sweep_create(specs={"lr": "0.01 .. 0.1"}, method="tpe", max_trials=5000, **common)
