"""The parsers' JSON decoding: orjson where installed, with json's values and errors for what it refuses."""

from __future__ import annotations

import json
import math

import pytest

from deeprepo_client.formats import _json
from deeprepo_client.formats._json import loads


def test_orjson_is_used_here():
    assert _json._orjson is not None  # the server depends on it; without it imports are slower


@pytest.mark.parametrize("text", [
    '{"a": 1, "b": [1.5, "x", null, true], "c": {"d": "é ✓ \\u00e9"}}',
    '{"k": 1, "k": 2}',  # duplicate keys: the last one wins, as in json
    '"\\ud83d\\ude00"',  # a surrogate pair
])
def test_same_values_as_json(text):
    assert loads(text) == json.loads(text)
    assert loads(text.encode()) == json.loads(text)


def test_what_orjson_refuses_is_decoded_by_json():
    assert math.isnan(loads('{"reward": NaN}')["reward"])  # Python's json writes NaN; verifiers files hold it
    assert loads(b"[Infinity, -Infinity]") == [math.inf, -math.inf]
    assert loads("123456789012345678901234567890") == 123456789012345678901234567890  # exact, not a float
    assert loads(b"[-9223372036854775809]") == [-9223372036854775809]
    assert loads('"\\ud800"') == "\ud800"  # a lone surrogate: kept here, cleaned before Postgres


def test_errors_are_jsons():
    with pytest.raises(json.JSONDecodeError) as err:
        loads('{"a": [1, 2')
    assert "line 1 column" in str(err.value)
