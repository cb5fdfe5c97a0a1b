"""Keyset paging for every list: a page is the rows after (or before) a cursor, never an OFFSET.

A cursor is the sort key of a page's last (or first) row plus the row's id, base64url-encoded JSON
with the list's order name in it. It is not signed: it only says where to start reading inside a
query that is already scoped to what the reader may see, so a changed one can move the window but
never widen it. One that does not decode, names another order or carries values of the wrong type
is a `BadCursor` (400 with its message: `front.middleware` for pages, `api_root` for the API).
Deep pages cost what the first one does: the database seeks to the key through the sort's index.
The one OFFSET, `offset_page`, answers the API's old numbered paging for clients that still send it.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db.models import F, Q, QuerySet
from django.db.models.expressions import OrderBy
from django.http import HttpRequest

T = TypeVar("T")
MAX_CURSOR = 2000  # characters; a sort key is a few values, so longer is not one of ours


class BadCursor(ValueError):
    """A cursor this list did not make."""


@dataclass(frozen=True)
class SortKey:
    """One column of a list's order. `kind` is the Python type of its values ("int", "float", "str",
    "datetime", "bool"): a decoded cursor is checked against it before it reaches SQL."""

    field: str  # a model field or annotation, `__` to follow a relation ("run__created_at")
    kind: str
    desc: bool = False
    nullable: bool = False
    nulls_last: bool = True  # where NULLs sort in this order (only for nullable keys)

    def reversed(self) -> SortKey:
        return SortKey(self.field, self.kind, not self.desc, self.nullable, not self.nulls_last)

    def order(self) -> OrderBy:
        if not self.nullable:
            return F(self.field).desc() if self.desc else F(self.field).asc()
        where = {"nulls_last": True} if self.nulls_last else {"nulls_first": True}
        return F(self.field).desc(**where) if self.desc else F(self.field).asc(**where)

    def value(self, row: Any) -> Any:
        for part in self.field.split("__"):
            row = getattr(row, "pk" if part == "id" else part)
        return row


def id_key(*, desc: bool = False) -> SortKey:
    """The tie-breaker every order ends with, so no two rows share a position."""
    return SortKey("id", "int", desc=desc)


def newest_first() -> list[SortKey]:
    """The order of lists of things made over time (jobs, sweeps, artifacts): newest first."""
    return [SortKey("created_at", "datetime", desc=True), id_key(desc=True)]


def _after_one(key: SortKey, value: Any) -> Q:
    """Rows strictly after `value` in this key's order."""
    if value is None:  # NULLs first: every non-NULL follows; NULLs last: nothing does
        return Q(**{f"{key.field}__isnull": False}) if not key.nulls_last else Q(pk__in=[])
    beyond = Q(**{f"{key.field}__{'lt' if key.desc else 'gt'}": value})
    if key.nullable and key.nulls_last:
        beyond |= Q(**{f"{key.field}__isnull": True})
    return beyond


def _equal(key: SortKey, value: Any) -> Q:
    return Q(**{f"{key.field}__isnull": True}) if value is None else Q(**{key.field: value})


def keyset_after(keys: list[SortKey], values: list[Any]) -> Q:
    """Rows after `values` in the order of `keys`: k1 after, or k1 equal and the rest after."""
    condition = _after_one(keys[-1], values[-1])
    for key, value in zip(reversed(keys[:-1]), reversed(values[:-1]), strict=True):
        condition = _after_one(key, value) | (_equal(key, value) & condition)
    first, v = keys[0], values[0]
    if v is not None and not first.nullable:
        # Redundant, but it lets the planner start the index scan at the key instead of filtering.
        condition &= Q(**{f"{first.field}__{'lte' if first.desc else 'gte'}": v})
    return condition


def _encode_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return {"t": value.isoformat()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"f": repr(value)}  # nan, inf, -inf: JSON has no spelling for them
    return value


def _decode_value(raw: Any, kind: str) -> Any:
    if raw is None:
        return None
    if kind == "datetime" and isinstance(raw, dict) and isinstance(raw.get("t"), str):
        try:
            return dt.datetime.fromisoformat(raw["t"])
        except ValueError:
            raise BadCursor("bad cursor: not a time") from None
    if kind == "float" and isinstance(raw, dict) and raw.get("f") in ("nan", "inf", "-inf"):
        return float(raw["f"])
    if kind == "float" and isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if kind == "int" and isinstance(raw, int) and not isinstance(raw, bool) and abs(raw) < 2**63:
        return raw
    if kind == "str" and isinstance(raw, str) and len(raw) <= 1000:
        return raw
    if kind == "bool" and isinstance(raw, bool):
        return raw
    raise BadCursor(f"bad cursor: {kind} value expected")


def cursor_encode(*, order: str, forward: bool, values: list[Any]) -> str:
    payload = {"o": order, "d": "n" if forward else "p", "v": [_encode_value(v) for v in values]}
    text = json.dumps(payload, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def cursor_decode(raw: str, *, order: str, keys: list[SortKey]) -> tuple[bool, list[Any]]:
    """(forward?, the key values) of a cursor made for `order`; anything else is BadCursor."""
    if len(raw) > MAX_CURSOR:
        raise BadCursor("bad cursor: too long")
    try:
        payload = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError):
        raise BadCursor("bad cursor: it does not decode") from None
    if not isinstance(payload, dict) or payload.get("d") not in ("n", "p") or not isinstance(payload.get("v"), list):
        raise BadCursor("bad cursor: it does not decode")
    if payload.get("o") != order:
        raise BadCursor("bad cursor: it was made for another order of this list")
    if len(payload["v"]) != len(keys):
        raise BadCursor("bad cursor: wrong number of values")
    values = [_decode_value(v, k.kind) for v, k in zip(payload["v"], keys, strict=True)]
    if any(v is None and not k.nullable for v, k in zip(values, keys, strict=True)):
        raise BadCursor("bad cursor: a value is missing")
    return payload["d"] == "n", values


def cursor_at(row: Any, *, keys: list[SortKey], order: str, forward: bool = True) -> str:
    """The cursor of the rows after `row` (before it, with forward=False)."""
    return cursor_encode(order=order, forward=forward, values=[k.value(row) for k in keys])


@dataclass
class KeysetPage(Generic[T]):
    rows: list[T]
    next_cursor: str  # "" when this is the last page
    prev_cursor: str  # "" when this is the first page
    at_start: bool  # the list's first page (no cursor, or going back reached the start)


def page_around(rows: list[T], *, per_page: int, forward: bool, from_cursor: bool,
                cursor_of: Any) -> KeysetPage[T]:
    """A page from up to per_page + 1 rows read from the cursor outwards (backwards: nearest first);
    `cursor_of(row, forward)` makes the cursors of its ends."""
    more = len(rows) > per_page
    rows = rows[:per_page]
    if not forward:
        rows.reverse()
    if not rows:
        return KeysetPage(rows=[], next_cursor="", prev_cursor="", at_start=not from_cursor)
    has_next = more if forward else True  # going back, the page we came from follows
    has_prev = from_cursor if forward else more
    return KeysetPage(rows=rows, next_cursor=cursor_of(rows[-1], True) if has_next else "",
                      prev_cursor=cursor_of(rows[0], False) if has_prev else "", at_start=not has_prev)


def keyset_page(qs: QuerySet[Any], *, keys: list[SortKey], order: str, cursor: str = "",
                per_page: int = 50) -> KeysetPage[Any]:
    """One page of `qs` in the order of `keys` (the last must be unique, e.g. `id_key()`), starting
    after or before `cursor`. One query of per_page + 1 rows: the extra row says whether more follow."""
    forward, values = cursor_decode(cursor, order=order, keys=keys) if cursor else (True, None)
    walk = keys if forward else [k.reversed() for k in keys]
    if values is not None:
        qs = qs.filter(keyset_after(walk, values))
    rows = list(qs.order_by(*(k.order() for k in walk))[: per_page + 1])
    return page_around(rows, per_page=per_page, forward=forward, from_cursor=values is not None,
                       cursor_of=lambda row, ahead: cursor_at(row, keys=keys, order=order, forward=ahead))


def offset_page(qs: QuerySet[Any], *, keys: list[SortKey], order: str, offset: int, per_page: int) -> KeysetPage[Any]:
    """The API's old numbered paging, still answered for clients that send it: per_page rows from
    `offset` (an OFFSET, so slow deep), their next_cursor set so such a client can go on by cursor."""
    rows = list(qs.order_by(*(k.order() for k in keys))[offset : offset + per_page + 1])
    following = cursor_at(rows[per_page - 1], keys=keys, order=order) if len(rows) > per_page else ""
    return KeysetPage(rows=rows[:per_page], next_cursor=following, prev_cursor="", at_start=False)


def list_after(items: list[T], *, key: Any, cursor: str, order: str, kind: str, per_page: int) -> KeysetPage[T]:
    """The same paging over a list already in memory, sorted ascending by a unique `key(item)`."""
    forward, values = cursor_decode(cursor, order=order, keys=[SortKey("k", kind)]) if cursor else (True, None)
    if values is None:
        near = items[: per_page + 1]
    elif forward:
        near = [i for i in items if key(i) > values[0]][: per_page + 1]
    else:
        near = [i for i in reversed(items) if key(i) < values[0]][: per_page + 1]
    return page_around(near, per_page=per_page, forward=forward, from_cursor=values is not None,
                       cursor_of=lambda item, ahead: cursor_encode(order=order, forward=ahead, values=[key(item)]))


def cursor_param(request: HttpRequest) -> str:
    return request.GET.get("cursor", "").strip()


@dataclass
class Pager:
    """What `templates/front/_pager.html` shows: links to the first, previous and next pages."""

    label: str  # the list's name for screen readers: "Runs pages"
    first_url: str
    prev_url: str
    next_url: str
    shown: int  # rows on this page
    noun: str  # "run", "rollout"…
    plural: str  # the noun with an s: every list's noun takes one
    load_via: str = ""  # a stable element's id the links load through (htmx, app.js), "" for plain links


def pager_for(request: HttpRequest, page: KeysetPage[Any], *, label: str, noun: str, load_via: str = "") -> Pager:
    """The pager of `page`: this URL with its cursor (and any old `page=`) replaced."""

    def url(cursor: str) -> str:
        query = request.GET.copy()
        query.pop("page", None)
        query.pop("cursor", None)
        if cursor:
            query["cursor"] = cursor
        text = query.urlencode()
        return f"{request.path}?{text}" if text else request.path

    return Pager(
        label=label,
        first_url="" if page.at_start else url(""),
        prev_url=url(page.prev_cursor) if page.prev_cursor else "",
        next_url=url(page.next_cursor) if page.next_cursor else "",
        shown=len(page.rows),
        noun=noun,
        plural=f"{noun}s",
        load_via=load_via,
    )
