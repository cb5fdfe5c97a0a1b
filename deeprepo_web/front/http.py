"""What every HTML view needs: htmx partials, query parameters, service errors on forms (lists page by
cursor: `front/paging.py`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

T = TypeVar("T")

# The answer to a poll of a part that is now final (it comes back without data-live-url, static/js/poll.js);
# htmx would also stop its own polling on this status.
STOP_POLLING = 286
MAX_PAGE = 100_000  # the API's old numbered pages stop here (an OFFSET past it overflows)


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


def service_error(form: forms.BaseForm, error: Exception) -> None:
    """A service error whose text is "field: message" (JudgeError, LabelError …): beside its field, or above the form."""
    field, sep, message = str(error).partition(": ")
    if sep:
        form_error(form, field, message)
    else:
        form.add_error(None, str(error))


def error_lines(form: forms.BaseForm) -> list[str]:
    """Every error of a form as "field: message" (a field's label when it has one; the whole form's
    errors as they are), for a page that shows them away from the form."""
    return [str(message) if name == "__all__" else f"{form.fields[name].label or name}: {message}"
            for name, messages in form.errors.items() for message in messages]
def form_page(request: HttpRequest, form: forms.BaseForm, save: Callable[[dict[str, Any]], T], *,
              done: Callable[[T], HttpResponse], template: str, context: dict[str, Any],
              errors: type[Exception], prefixes: tuple[str, ...] = ()) -> HttpResponse:
    """A form page whose POST is one service call: `save(cleaned_data)`, then `done(result)` (a
    redirect). A GET renders `template`; a form or service refusal renders it again with 422, the
    service's error (a feature's input error with `field` and `message`) beside its field."""
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                return done(save(form.cleaned_data))
            except errors as e:
                form_error(form, getattr(e, "field", "__all__"), getattr(e, "message", str(e)), prefixes=prefixes)
        status = 422
    return render(request, template, {**context, "form": form}, status=status)


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
