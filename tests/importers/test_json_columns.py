"""dumps writes every jsonb value of an import: orjson, with json for what orjson refuses."""

from __future__ import annotations

import json

from deeprepo_web.runs.ingest.pg import dumps


def test_values_round_trip():
    value = {"a": [1, 2.5, None, True, "é ✓"], "nested": {"k": "v\n\t\"q\""}, 3: "int key"}
    assert json.loads(dumps(value)) == {"a": [1, 2.5, None, True, "é ✓"], "nested": {"k": "v\n\t\"q\""},
                                         "3": "int key"}


def test_nan_becomes_null_as_clean_deep_makes_it():
    assert json.loads(dumps({"x": float("nan"), "y": float("inf")})) == {"x": None, "y": None}


def test_integers_past_64_bits_stay_exact():
    assert json.loads(dumps({"seed": 2**70})) == {"seed": 2**70}

