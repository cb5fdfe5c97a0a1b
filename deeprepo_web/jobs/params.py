"""Job template parameters: the schema, validation of values against it, and the command build.

Pure functions, no ORM. A template's command holds `{name}` placeholders; each is replaced by
the shlex-quoted value of a validated parameter, so form input only ever reaches a shell as one
inert word. `{{` and `}}` are literal braces.

Schema: a list of {"name", "type", "label"?, "help"?, "default"?, "required"?, "min"?, "max"?,
"choices"?, "max_length"?, "flag"?}. Types: int, float, str, text (multi-line), choice, bool.
A bool with "flag" renders as that flag when true and as nothing when false.
"""

from __future__ import annotations

import math
import re
import shlex
import string
from typing import Any

TYPES = ("int", "float", "str", "text", "choice", "bool")
# Filled by the launcher, not the form: where outputs go, and the ids of the job and its run.
RESERVED = ("output_dir", "job_id", "run_id")
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}")
_KEYS = {"name", "type", "label", "help", "default", "required", "min", "max", "choices", "max_length", "flag"}
_STR_MAX = 4096
_TEXT_MAX = 65536


class ParamError(ValueError):
    """A bad value or schema; `field` names what was wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def placeholders(command: str) -> list[str]:
    """Names used as {placeholders}, in order; rejects format specs and attribute access."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(command))
    except ValueError as e:
        raise ParamError("command_template", f"{e} (write literal braces as {{{{ and }}}})") from e
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if not _NAME.fullmatch(field):
            raise ParamError("command_template", f"placeholder {{{field}}} is not a parameter name")
        if spec or conversion:
            raise ParamError("command_template", f"placeholder {{{field}}} may not carry a format (:…) or (!…)")
        names.append(field)
    return names


def _number(value: Any, kind: str, field: str) -> int | float:
    if isinstance(value, bool):
        raise ParamError(field, f"must be {'an integer' if kind == 'int' else 'a number'}")
    if kind == "int":
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", value):
            return int(value)
        raise ParamError(field, f"must be an integer, got {str(value)[:40]!r}")
    try:
        out = float(value) if isinstance(value, int | float | str) else math.nan
    except ValueError:
        raise ParamError(field, f"must be a number, got {str(value)[:40]!r}") from None
    if not math.isfinite(out):
        raise ParamError(field, "must be a finite number")
    return out


def validate_schema(schema: Any) -> list[dict[str, Any]]:
    """The schema, checked and normalised (defaults validated against their own bounds)."""
    if not isinstance(schema, list):
        raise ParamError("params_schema", "must be a JSON list of parameter objects")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, raw in enumerate(schema):
        where = f"params_schema[{i}]"
        if not isinstance(raw, dict):
            raise ParamError(where, "must be an object with at least name and type")
        unknown = set(raw) - _KEYS
        if unknown:
            raise ParamError(where, f"unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(_KEYS))})")
        name = raw.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ParamError(where, f"name {name!r} must be lower_snake_case (a-z, 0-9, _)")
        if name in RESERVED:
            raise ParamError(where, f"name {name!r} is reserved (filled by the launcher)")
        if name in seen:
            raise ParamError(where, f"parameter {name!r} is defined twice")
        seen.add(name)
        kind = raw.get("type", "str")
        if kind not in TYPES:
            raise ParamError(f"{where}.type", f"{kind!r} is not one of {', '.join(TYPES)}")
        p: dict[str, Any] = {"name": name, "type": kind, "label": str(raw.get("label") or name.replace("_", " ")),
                             "help": str(raw.get("help") or ""), "required": bool(raw.get("required", False))}
        if kind in ("int", "float"):
            for bound in ("min", "max"):
                if raw.get(bound) is not None:
                    p[bound] = _number(raw[bound], kind, f"{where}.{bound}")
            if "min" in p and "max" in p and p["min"] > p["max"]:
                raise ParamError(where, f"min {p['min']} is above max {p['max']}")
        if kind == "choice":
            choices = raw.get("choices")
            if not isinstance(choices, list) or not choices or not all(isinstance(c, str) for c in choices):
                raise ParamError(f"{where}.choices", "a choice parameter needs a non-empty list of strings")
            p["choices"] = list(choices)
        if kind in ("str", "text"):
            limit = raw.get("max_length", _TEXT_MAX if kind == "text" else _STR_MAX)
            if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= _TEXT_MAX:
                raise ParamError(f"{where}.max_length", f"must be an integer 1..{_TEXT_MAX}")
            p["max_length"] = limit
        if kind == "bool" and raw.get("flag") is not None:
            flag = raw["flag"]
            if not isinstance(flag, str) or not re.fullmatch(r"-{1,2}[A-Za-z0-9][A-Za-z0-9_\-]*", flag):
                raise ParamError(f"{where}.flag", f"{flag!r} must look like --some-flag")
            p["flag"] = flag
        if "default" in raw and raw["default"] is not None:
            p["default"] = _coerce(p, raw["default"], f"{where}.default")
        out.append(p)
    return out


def validate_template(command: str, schema: Any) -> list[dict[str, Any]]:
    """Check a template before saving it: every placeholder is a parameter or reserved."""
    params = validate_schema(schema)
    if not command.strip():
        raise ParamError("command_template", "is empty")
    if "\x00" in command:
        raise ParamError("command_template", "contains a NUL byte")
    known = {p["name"] for p in params} | set(RESERVED)
    for name in placeholders(command):
        if name not in known:
            raise ParamError(
                "command_template",
                f"references unknown parameter {{{name}}} (defined: {', '.join(sorted(known))})",
            )
    return params


def _coerce(p: dict[str, Any], value: Any, field: str) -> Any:
    kind = p["type"]
    if kind in ("int", "float"):
        num = _number(value, kind, field)
        if "min" in p and num < p["min"]:
            raise ParamError(field, f"must be ≥ {p['min']}, got {num}")
        if "max" in p and num > p["max"]:
            raise ParamError(field, f"must be ≤ {p['max']}, got {num}")
        return num
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "on", "1", "yes", "false", "off", "0", "no", ""):
            return value.lower() in ("true", "on", "1", "yes")
        raise ParamError(field, f"must be true or false, got {str(value)[:40]!r}")
    if not isinstance(value, str):
        raise ParamError(field, f"must be a string, got {type(value).__name__}")
    if "\x00" in value:
        raise ParamError(field, "contains a NUL byte")
    if kind == "choice":
        if value not in p["choices"]:
            raise ParamError(field, f"{value[:40]!r} is not one of {', '.join(p['choices'])}")
        return value
    if len(value) > p["max_length"]:
        raise ParamError(field, f"is {len(value)} characters long; the limit is {p['max_length']}")
    if kind == "str" and ("\n" in value or "\r" in value):
        raise ParamError(field, "must be one line")
    return value


def validate_params(schema: list[dict[str, Any]], values: dict[str, Any]) -> dict[str, Any]:
    """Typed values for every parameter of the schema; ParamError names the first bad field."""
    known = {p["name"] for p in schema}
    extra = sorted(set(values) - known)
    if extra:
        raise ParamError(extra[0], "is not a parameter of this template")
    out: dict[str, Any] = {}
    for p in schema:
        name = p["name"]
        raw = values.get(name)
        if raw is None or (raw == "" and p["type"] not in ("str", "text", "bool")):
            if "default" in p:
                out[name] = p["default"]
                continue
            if p["type"] == "bool":
                out[name] = False
                continue
            if p["required"] or p["type"] not in ("str", "text"):
                raise ParamError(name, "is required")
            out[name] = ""
            continue
        value = _coerce(p, raw, name)
        if p["required"] and value == "":
            raise ParamError(name, "is required")
        out[name] = value
    return out


def _render_value(p: dict[str, Any] | None, value: Any) -> str:
    if p is not None and p["type"] == "bool":
        if "flag" in p:
            return p["flag"] if value else ""
        return "true" if value else "false"
    if isinstance(value, float):
        return shlex.quote(repr(value))
    return shlex.quote(str(value))


def render_command(command: str, schema: list[dict[str, Any]], values: dict[str, Any],
                   reserved: dict[str, str]) -> str:
    """The command line: literal text kept, every placeholder replaced by one quoted word."""
    by_name = {p["name"]: p for p in schema}
    parts: list[str] = []
    for literal, field, _, _ in string.Formatter().parse(command):
        parts.append(literal)
        if field is None:
            continue
        if field in by_name:
            parts.append(_render_value(by_name[field], values[field]))
        elif field in reserved:
            parts.append(_render_value(None, reserved[field]))
        else:
            raise ParamError("command_template", f"references unknown parameter {{{field}}}")
    return "".join(parts)
