"""Accessibility helpers for templates."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def aria_sort(sort: str, column: str) -> str:
    """The aria-sort of a sortable header `column` while the table is sorted by `sort` ("-x" descending)."""
    if sort == column:
        return "ascending"
    if sort == f"-{column}":
        return "descending"
    return "none"
