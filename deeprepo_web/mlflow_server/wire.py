"""Reading MLflow request bodies: JSON objects, key/value lists, metric values (NaN comes as the
string "NaN", infinities as "Infinity" / "-Infinity"), integers that protobuf JSON may send as strings."""

from __future__ import annotations

import math
from typing import Any

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from deeprepo_web.mlflow_server.errors import MlflowError, invalid

_SPECIAL = {"nan": math.nan, "infinity": math.inf, "inf": math.inf, "-infinity": -math.inf, "-inf": -math.inf}


def body(request: HttpRequest) -> dict[str, Any]:
    """The JSON object of a POST body, or a clear MALFORMED_REQUEST."""
    try:
        raw = request.body
    except RequestDataTooBig as exc:
        raise MlflowError("REQUEST_LIMIT_EXCEEDED", "request body over the server's limit; "
                                                    "send smaller batches") from exc
    if not raw:
        return {}
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MlflowError("MALFORMED_REQUEST", f"request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MlflowError("MALFORMED_REQUEST", f"request body must be a JSON object, not {type(data).__name__}")
    return data


def args(request: HttpRequest) -> dict[str, Any]:
    """GET endpoints take query parameters; some clients send them as a JSON body instead."""
    if request.method == "GET":
        return {k: v for k, v in request.GET.items()}
    return body(request)


def text(data: dict[str, Any], field: str, *, required: bool = True, where: str = "") -> str:
    value = data.get(field)
    if value is None or value == "":
        if required:
            raise invalid(f"Missing value for required parameter '{where}{field}'")
        return ""
    if not isinstance(value, str | int | float | bool):
        raise invalid(f"Invalid value for parameter '{where}{field}': expected a string, got "
                      f"{type(value).__name__}")
    return str(value)


def integer(data: dict[str, Any], field: str, default: int | None = None, *, where: str = "") -> int | None:
    value = data.get(field)
    if value is None or value == "":
        return default
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError) as exc:
        raise invalid(f"Invalid value {value!r} for parameter '{where}{field}': expected an integer") from exc


def number(value: Any, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        special = _SPECIAL.get(value.strip().lower())
        if special is not None:
            return special
        try:
            return float(value)
        except ValueError:
            pass
    raise invalid(f"Invalid value {value!r} for parameter '{where}': expected a number (or \"NaN\", "
                  "\"Infinity\", \"-Infinity\")")


def number_out(value: float | None) -> float | str | None:
    """A double as protobuf JSON writes it: non-finite values as strings."""
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def pairs(data: dict[str, Any], field: str) -> list[tuple[str, str]]:
    """[{key, value}] → [(key, value)], each key checked."""
    items = data.get(field) or []
    if not isinstance(items, list):
        raise invalid(f"Invalid value for parameter '{field}': expected a list of {{key, value}} objects")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise invalid(f"Invalid value for parameter '{field}[{i}]': expected a {{key, value}} object")
        out.append((text(item, "key", where=f"{field}[{i}]."), text(item, "value", required=False)))
    return out
