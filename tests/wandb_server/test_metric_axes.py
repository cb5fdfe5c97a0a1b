"""define_metric as each SDK version writes it into config `_wandb.m` (captured from the three SDKs
the tests run: wandb-core keeps the glob, 0.21 the matched key, 0.17.9 lists the step metric first)."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.runs.axes import metric_axes_for, metric_axes_set
from deeprepo_web.runs.services import run_create
from deeprepo_web.wandb_server.mapping import metric_axes

NEWEST = {"value": {"m": [{"2": "eval/*", "5": 2, "6": [1], "7": []}, {"1": "eval_step", "6": [], "7": []}]}}
V021 = {"value": {"m": [{"1": "eval/acc", "5": 2, "6": [1, 3], "7": []}, {"1": "eval_step", "6": [], "7": []}]}}
V017 = {"desc": None, "value": {"m": [{"1": "eval_step"}, {"1": "eval/acc", "5": 1, "6": [1]}]}}


@pytest.mark.parametrize(("sent", "axes"), [(NEWEST, {"eval/*": "eval_step"}), (V021, {"eval/acc": "eval_step"}),
                                            (V017, {"eval/acc": "eval_step"})])
def test_each_sdk_shape(sent: dict[str, Any], axes: dict[str, str]) -> None:
    assert metric_axes(sent) == axes


def test_bad_shapes_give_nothing() -> None:
    for sent in (None, "x", {"value": {"m": "no"}}, {"value": {"m": [{"1": "a", "5": 9}, {"1": "b", "5": 0},
                                                                      {"1": "c", "5": True}, 3]}}):
        assert metric_axes(sent) == {}


@pytest.mark.django_db
def test_a_glob_covers_keys_and_an_exact_key_wins(team: Any) -> None:
    run, _ = run_create(project=team.project, name="r")
    assert metric_axes_set(run=run, axes={"eval/*": "eval_step", "eval/loss": "epoch", "x": "x"}) == 2
    got = metric_axes_for(run=run, keys=["eval/acc", "eval/loss", "train/loss", "eval_step"])
    assert got == {"eval/acc": "eval_step", "eval/loss": "epoch"}
    metric_axes_set(run=run, axes={"eval/loss": "eval_step"})  # defined again: the new one
    assert metric_axes_for(run=run, keys=["eval/loss"]) == {"eval/loss": "eval_step"}
