"""How logged values and batches become the JSON bytes the spool keeps and the sender sends."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

try:  # the client's `fast` extra: ~10x faster encoding of big batches
    import orjson
except ImportError:  # pragma: no cover - depends on the install
    orjson = None  # type: ignore[assignment]

_PLAIN = frozenset({float, int})


def encode(body: Any, exact_floats: bool) -> bytes:
    """JSON bytes of a batch. orjson writes NaN/Infinity as null, so batches holding them (metrics
    keep them on purpose) go through json, which writes them as the server reads them."""
    if orjson is not None and not exact_floats:
        try:
            return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
        except TypeError:
            pass  # what orjson refuses (huge ints, odd types) gets json's behaviour and errors
    return json.dumps(body, allow_nan=True).encode()


def metric_values(values: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The numbers of one log() call, and whether any is NaN/Infinity (or too big for orjson).

    The common case (str keys, float/int values) is checked by type in C loops and copied as is.
    """
    if _PLAIN.issuperset(map(type, values.values())) and all(type(k) is str for k in values):
        try:
            return dict(values), not math.isfinite(sum(values.values()))
        except OverflowError:
            return dict(values), True
    numbers: dict[str, float | None] = {}
    special = False
    for key, value in values.items():
        if isinstance(value, bool):
            value = float(value)
        if value is None or isinstance(value, int | float):
            number = None if value is None else float(value)
        elif hasattr(value, "item"):  # numpy / torch scalars
            number = float(value.item())
        else:
            print(f"deeprepo: log: {key!r} is a {type(value).__name__}, not a number; skipped", file=sys.stderr,
                  flush=True)
            continue
        numbers[str(key)] = number
        special |= number is not None and not math.isfinite(number)
    return numbers, special
