"""What every HTML view needs: the page parameter, htmx partials, service errors on forms."""

from __future__ import annotations

import math

from django import forms
from django.http import HttpRequest

# The answer to a poll of a part that is now final (it comes back without data-live-url, static/js/poll.js);
# htmx would also stop its own polling on this status.
STOP_POLLING = 286
MAX_PAGE = 100_000


def page_param(request: HttpRequest, name: str = "page") -> int:
    """The 1-based page number in the query string; anything unusable is page 1."""
    try:
        return max(1, min(int(request.GET.get(name, "1")), MAX_PAGE))
    except ValueError:
        return 1


def is_htmx(request: HttpRequest, target: str | None = None) -> bool:
    """An htmx request; with `target`, one that swaps the element of that id (a partial of the page)."""
    htmx = getattr(request, "htmx", None)  # django_htmx's HtmxDetails: false unless HX-Request
    if not htmx:
        return False
    return target is None or htmx.target == target


def form_error(form: forms.BaseForm, field: str, message: str, *, prefixes: tuple[str, ...] = ()) -> None:
    """A service's error on the form: beside its field when the form has it (also as `<prefix><field>`,
    or as the field before an index: `params[2]` goes to `params`), else above the form."""
    base = field.split("[")[0]
    for name in (*(p + field for p in prefixes), field, base):
        if name in form.fields:
            form.add_error(name, message if name != base or base == field else f"{field}: {message}")
            return
    form.add_error(None, f"{field}: {message}")


def int_param(raw: str, name: str, errors: list[str]) -> int | None:
    """A whole number from a query parameter; "" is None; anything else bad is one line in `errors`."""
    if raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        errors.append(f"{name}: {raw[:40]!r} is not a whole number")
        return None


def float_param(raw: str, name: str, errors: list[str]) -> float | None:
    """A finite number from a query parameter; "" is None; NaN, infinities and words go to `errors`."""
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        errors.append(f"{name}: {raw[:40]!r} is not a number")
        return None
    return value
