"""Just enough of the protobuf wire format to read messages whose field numbers we know.

A reader needs no generated classes (and so no protobuf package of a matching version): each
message is a run of (field number, wire type, value). Unknown fields are skipped by their wire type,
which is what makes records written by newer versions readable.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes")


def fields(buf: bytes) -> Iterator[tuple[int, Any]]:
    """(field number, value): an int for varints, bytes for length-delimited fields, a float for
    64-bit fields (doubles are the only 64-bit fields we read), an int for 32-bit ones."""
    pos = 0
    end = len(buf)
    value: Any
    while pos < end:
        # One-byte tags and lengths are nearly all of them: read those without a call.
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 2:
            size = buf[pos] if pos < end else 0x80
            if size < 0x80:
                pos += 1
            else:
                size, pos = _varint(buf, pos)
            if pos + size > end:
                raise WireError(f"field {number}: {size} bytes announced, {end - pos} left")
            value, pos = buf[pos:pos + size], pos + size
        elif wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            if pos + 8 > end:
                raise WireError("truncated 64-bit field")
            value, pos = struct.unpack_from("<d", buf, pos)[0], pos + 8
        elif wire == 5:
            if pos + 4 > end:
                raise WireError("truncated 32-bit field")
            value, pos = struct.unpack_from("<I", buf, pos)[0], pos + 4
        else:
            raise WireError(f"field {number}: wire type {wire} is not used by proto3")
        yield number, value


def text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def signed(value: int) -> int:
    """An int64 field stored as a varint: two's complement past 2**63."""
    return value - (1 << 64) if value >= 1 << 63 else value


def packed_varints(buf: bytes) -> list[int]:
    """The values of a packed repeated varint field."""
    out = []
    pos = 0
    while pos < len(buf):
        value, pos = _varint(buf, pos)
        out.append(value)
    return out
