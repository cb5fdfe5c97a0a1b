"""Number and duration formatting for dense tables."""

from __future__ import annotations

import math
from typing import Any

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 9.95:  # an eval of 0.16 s is not "0s"
        return f"{seconds:.1f}s" if seconds >= 0.05 else ("0s" if seconds <= 0 else "<0.1s")
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


@register.filter
def num(value: Any) -> str:
    """Four significant digits, no exponent for everyday magnitudes."""
    if value is None or value == "":
        return "—"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return f"{v:.3g}"
    if float(v).is_integer() and abs(v) < 1e6:
        return f"{int(v)}"
    return f"{v:.4g}"


@register.filter
def scalar_items(summary: Any) -> list[tuple[str, Any]]:
    """The scalar entries of a summary dict, for a facts list (nested values are left to the config view)."""
    if not isinstance(summary, dict):
        return []
    return [(str(k), v) for k, v in sorted(summary.items()) if isinstance(v, int | float | str | bool)][:40]


@register.filter
def get(mapping: Any, key: str) -> Any:
    return mapping.get(key, "") if isinstance(mapping, dict) else ""


@register.filter
def pct(value: Any) -> str:
    """A share in [0, 1] as a percentage with one decimal ("—" when unknown)."""
    if value is None:
        return "—"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "—"
    return "—" if not math.isfinite(v) else f"{100 * v:.1f} %"
