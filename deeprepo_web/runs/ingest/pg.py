"""Postgres helpers of the ingest: jsonb text, binary parameters, ids drawn in bulk."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
from django.db import connection
from psycopg.types.json import set_json_dumps

_json_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def dumps(value: Any) -> str:
    """JSON text for a jsonb column. orjson encodes ~9x faster than json (which was a tenth of an
    import); NaN and Infinity become null, as clean_deep makes them. What orjson refuses (integers
    past 64 bits, lone surrogates, odd types) goes to json, so those behave as they always did."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return _json_encode(value)



def execute_binary(sql: str, params: list[Any]) -> psycopg.Cursor[Any]:
    """Run `sql` with binary parameters on Django's connection (so inside its transaction).

    Django binds parameters client-side, which quotes big text arrays (prompts, answers, metrics)
    character by character in Python; binary parameters (%b) cost a copy. Errors come out as Django's
    (DatabaseError, IntegrityError, ...) like those of any other query here.
    """
    with connection.wrap_database_errors:
        cur = psycopg.Cursor(connection.connection)
        cur.execute(sql, params)
    return cur



def next_ids(cur: Any, table: str, n: int) -> list[int]:
    """`n` ids of `table` drawn in one round trip from its sequence `<table>_id_seq` (the identity
    column's, or for the views runs_turn and runs_toolcall the sequence their ids come from)."""
    if n == 0:
        return []
    cur.execute("SELECT nextval(%s::regclass) FROM generate_series(1, %s)", [f"{table}_id_seq", n])
    return [row[0] for row in cur.fetchall()]


# Column types per (table, columns), read from the catalog once per process: a binary COPY sends
# each field in exactly its column's type, so the types come from the table as it is, not from here.
_COLUMN_TYPES: dict[tuple[str, tuple[str, ...]], list[int]] = {}


def _column_types(cur: psycopg.Cursor[Any], table: str, columns: Sequence[str]) -> list[int]:
    key = (table, tuple(columns))
    if key not in _COLUMN_TYPES:
        cur.execute("SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                    "AND NOT attisdropped", [table])
        types = dict(cur.fetchall())
        _COLUMN_TYPES[key] = [types[c] for c in columns]
    return _COLUMN_TYPES[key]


def _json_as_is(text: str) -> str:
    return text


@contextmanager
def copy_binary(table: str, columns: Sequence[str]) -> Iterator[psycopg.Copy]:
    """COPY `table` (`columns`) FROM STDIN in binary: Postgres takes text fields as they are instead
    of parsing every character of a 1 KB body for escapes (a text COPY of turns cost Postgres about
    twice the CPU). Rows are written with `write_row`; jsonb values must be JSON text already
    (`dumps`), as the text COPY took them. On Django's connection, so inside its transaction."""
    cur = psycopg.Cursor(connection.connection)
    types = _column_types(cur, table, columns)
    set_json_dumps(_json_as_is, context=cur)  # this cursor only: jsonb fields are JSON text already
    with cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        try:
            yield copy
        except OverflowError as exc:
            # A number too big for its column: Postgres refused it as out of range in a text COPY;
            # raised the same way here, so callers that name the bad record keep working.
            raise psycopg.errors.NumericValueOutOfRange(f"{table}: a value does not fit its column ({exc})") from exc


# COPY's binary format: a signature and flags, then per row a field count and per field its
# length (-1: NULL) and big-endian bytes; -1 as field count ends the data.
COPY_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
COPY_BINARY_TRAILER = b"\xff\xff"
_BINARY_TYPES = {"int8": ">i8", "int2": ">i2", "float8": ">f8"}


def copy_binary_rows(columns: list[tuple[str, Any, Any]]) -> bytes:
    """Rows of COPY ... (FORMAT BINARY), built by numpy: columns are (type, array, null mask or None).

    Rows with the same nulls share one fixed layout, so each layout is one vectorised fill rather
    than a Python call per row; row order does not matter to COPY.
    """
    import numpy as np

    n = len(columns[0][1])
    masks = [np.zeros(n, dtype=bool) if null is None else np.asarray(null, dtype=bool) for _, _, null in columns]
    # One code per row saying which of its fields are NULL.
    code = np.zeros(n, dtype=np.int64)
    for i, mask in enumerate(masks):
        code |= mask.astype(np.int64) << i
    parts = []
    codes = np.unique(code)
    for c in codes:
        rows: Any = slice(None) if len(codes) == 1 else np.flatnonzero(code == c)
        count = n if len(codes) == 1 else len(rows)
        fields: list[tuple[str, str]] = [("n", ">i2")]
        for i, (typ, _, _) in enumerate(columns):
            fields.append((f"l{i}", ">i4"))
            if not (int(c) >> i) & 1:
                fields.append((f"v{i}", _BINARY_TYPES[typ]))
        block = np.empty(count, dtype=np.dtype(fields))
        block["n"] = len(columns)
        for i, (typ, values, _) in enumerate(columns):
            if (int(c) >> i) & 1:
                block[f"l{i}"] = -1
            else:
                block[f"l{i}"] = np.dtype(_BINARY_TYPES[typ]).itemsize
                block[f"v{i}"] = np.asarray(values)[rows]
        parts.append(block.tobytes())
    return b"".join(parts)
