"""A sweep's parameter space: what the form's per-parameter text means, and how big it is.

Pure functions, no ORM. Each swept parameter is written as one line of text:

    0.01, 0.03, 0.1     a list of values (any type; bool and choice also take "*": every value)
    1e-4 .. 0.3 log     a range (int and float parameters); "log" samples it on a log scale
    1 .. 8              an int range; a grid takes each integer in it

Every value and both ends of a range are checked against the template's own schema (types,
min / max, choices), so a trial can only get values the launch form would accept.
"""

from __future__ import annotations

import math
import re
from typing import Any

from deeprepo_web.jobs.params import ParamError, validate_params
from deeprepo_web.sweeps.errors import SweepInputError

# A grid over more points than this is refused (with its count): nobody means to queue that many.
MAX_GRID = 10_000
MAX_TRIALS = 1_000
MAX_VALUES = 1_000  # one parameter's list
_RANGE = re.compile(r"^\s*(?P<low>[^.\s][^\s]*?)\s*\.\.\s*(?P<high>[^\s]+)\s*(?P<log>log)?\s*$", re.IGNORECASE)


def _value(p: dict[str, Any], raw: Any, field: str) -> Any:
    try:
        return validate_params([p], {p["name"]: raw})[p["name"]]
    except ParamError as e:
        raise SweepInputError(field, e.message) from None


def parse_spec(p: dict[str, Any], text: str) -> dict[str, Any] | None:
    """One parameter's sweep line → its space entry; None when the line is blank (not swept)."""
    name, kind = p["name"], p["type"]
    text = (text or "").strip()
    if not text:
        return None
    if text == "*":
        if kind == "choice":
            return {"values": list(p["choices"])}
        if kind == "bool":
            return {"values": [False, True]}
        raise SweepInputError(name, "* (every value) is for choice and bool parameters only")
    match = _RANGE.match(text) if kind in ("int", "float") else None
    if match:
        low = _value(p, match["low"], name)
        high = _value(p, match["high"], name)
        if not low < high:
            raise SweepInputError(name, f"the range {low} .. {high} is empty: the low end must be below the high end")
        log = bool(match["log"])
        if log and low <= 0:
            raise SweepInputError(name, "a log range must start above 0")
        return {"low": low, "high": high, "log": log, "int": kind == "int"}
    if kind == "text":
        return {"values": [_value(p, text, name)]}  # multi-line text is never split: one fixed value
    raws = [v.strip() for v in text.split(",")]
    if any(r == "" for r in raws) and kind != "str":
        raise SweepInputError(name, "an empty value in the list (two commas, or a trailing comma)")
    if len(raws) > MAX_VALUES:
        raise SweepInputError(name, f"{len(raws)} values; at most {MAX_VALUES} per parameter")
    values: list[Any] = []
    for raw in raws:
        value = _value(p, raw, name)
        if value not in values:
            values.append(value)
    return {"values": values}


def space_parse(schema: list[dict[str, Any]], specs: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every parameter's line parsed; parameters left blank are not part of the space."""
    by_name = {p["name"]: p for p in schema}
    unknown = sorted(set(specs) - set(by_name))
    if unknown:
        raise SweepInputError(unknown[0], "is not a parameter of this template")
    space: dict[str, dict[str, Any]] = {}
    for p in schema:
        entry = parse_spec(p, specs.get(p["name"], ""))
        if entry is not None:
            space[p["name"]] = entry
    return space


def grid_values(entry: dict[str, Any], name: str) -> list[Any]:
    """The points a grid takes for one parameter: its list, or every integer of an int range."""
    if "values" in entry:
        return list(entry["values"])
    if entry["int"]:
        count = entry["high"] - entry["low"] + 1
        if count > MAX_GRID:
            raise SweepInputError(name, f"the range has {count:,} integers; a grid takes at most {MAX_GRID:,}")
        return list(range(entry["low"], entry["high"] + 1))
    raise SweepInputError(name, "a grid needs a list of values here (a float range has no grid points); "
                                "list them, or sweep with random or TPE")


def space_size(space: dict[str, dict[str, Any]]) -> float:
    """How many distinct points the space holds: math.inf when a float range is in it."""
    size = 1.0
    for entry in space.values():
        if "values" in entry:
            size *= len(entry["values"])
        elif entry["int"]:
            size *= entry["high"] - entry["low"] + 1
        else:
            return math.inf
    return size if space else 0.0


def space_check(space: dict[str, dict[str, Any]], method: str, max_trials: int) -> int:
    """Refuse an empty space and a grid too big to mean; returns the trials the sweep will run."""
    size = space_size(space)
    if size == 0:
        raise SweepInputError("space", "the parameter space is empty (0 combinations): give at least one "
                                       "parameter a list of values or a range")
    if method == "grid":
        for name, entry in space.items():
            grid_values(entry, name)
        if size > MAX_GRID:
            raise SweepInputError("space", f"the grid has {size:,.0f} combinations; at most {MAX_GRID:,} "
                                           "(narrow the lists, or sample it with random or TPE)")
        # A grid runs each point once: more trials than points would only repeat them.
        return min(max_trials, int(size))
    return max_trials
