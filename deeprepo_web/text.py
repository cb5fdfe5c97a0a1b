"""Text Postgres will store: NUL and lone surrogates become U+FFFD (model output and hand-made
JSON hold both; Postgres refuses them in text and jsonb)."""

from __future__ import annotations

import math
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str) -> str:
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # only lone surrogates fail; most text passes this cheap check
        value = _SURROGATE.sub("\ufffd", value)
    return value


def clean_deep(value: Any) -> Any:
    """clean_text through dicts (keys too) and lists; non-finite floats become None (JSONB has no NaN)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_deep(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
