"""What every HTML view needs: objects inside a project or 404, the page parameter, htmx, errors on forms."""

from __future__ import annotations

from typing import Any, TypeVar

from django import forms
from django.db.models import Manager, Model, QuerySet
from django.http import Http404, HttpRequest

M = TypeVar("M", bound=Model)

# htmx stops polling when a response carries this status.
STOP_POLLING = 286
MAX_PAGE = 100_000


def get_or_404(queryset: QuerySet[M, M] | Manager[M], what: str, **lookup: Any) -> M:
    """The one object matching `lookup` (scope it to a project or run in the lookup), or 404
    saying `what` was not found: outsiders learn nothing from the difference."""
    obj = queryset.filter(**lookup).first()
    if obj is None:
        raise Http404(f"no such {what}")
    return obj


def page_param(request: HttpRequest, name: str = "page") -> int:
    """The 1-based page number in the query string; anything unusable is page 1."""
    try:
        return max(1, min(int(request.GET.get(name, "1")), MAX_PAGE))
    except ValueError:
        return 1


def is_htmx(request: HttpRequest, target: str | None = None) -> bool:
    """An htmx request; with `target`, one that swaps the element of that id (a partial of the page)."""
    if not getattr(request, "htmx", False):
        return False
    return target is None or request.headers.get("HX-Target") == target


def form_error(form: forms.BaseForm, field: str, message: str, *, prefixes: tuple[str, ...] = ()) -> None:
    """A service's error on the form: beside its field when the form has it (also as `<prefix><field>`,
    or as the field before an index: `params[2]` goes to `params`), else above the form."""
    base = field.split("[")[0]
    for name in (*(p + field for p in prefixes), field, base):
        if name in form.fields:
            form.add_error(name, message if name != base or base == field else f"{field}: {message}")
            return
    form.add_error(None, f"{field}: {message}")
