"""The framing of TensorBoard event files (TFRecord): checksummed, length-prefixed records.

A record is `u64 length | u32 masked crc32c(length) | data | u32 masked crc32c(data)`, all
little-endian. A record whose length checksum is wrong cannot say where the next one starts: the
reader looks for the next offset whose length checksum holds and reads on from there. A record
whose data checksum is wrong is skipped whole. A file that ends inside a record is cut short: a
writer that is still running finishes it later (`partial_ok`), otherwise it is damage.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

try:  # the C implementation; the pure-Python one below gives the same numbers, more slowly
    from google_crc32c import value as _crc32c_c
except ImportError:  # pragma: no cover - exercised where the optional package is absent
    _crc32c_c = None

HEADER = 12  # length (8) + its checksum (4)
FOOTER = 4
MAX_RECORD = 1 << 31  # a length beyond this is damage, whatever its checksum says


def _table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def _crc32c_py(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c(data: bytes) -> int:
    return _crc32c_c(data) if _crc32c_c is not None else _crc32c_py(data)


def masked(data: bytes) -> int:
    """TFRecord's masked CRC-32C: rotated right by 15 bits plus a constant."""
    crc = _crc32c_c(data) if _crc32c_c is not None else _crc32c_py(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class Damage:
    """Bytes that are not a readable record, at `offset`."""

    def __init__(self, offset: int, message: str) -> None:
        self.offset = offset
        self.message = message


def header_ok(data: bytes | memoryview, pos: int) -> bool:
    """A whole, checksummed length header starts at `pos` (the first record of a file, for detection)."""
    if pos + HEADER > len(data):
        return False
    length_bytes = bytes(data[pos:pos + 8])
    return struct.unpack_from("<I", data, pos + 8)[0] == masked(length_bytes) and \
        struct.unpack("<Q", length_bytes)[0] < MAX_RECORD


def _resync(data: bytes, pos: int) -> int:
    """The next offset after `pos` where a record header checks out; len(data) if none."""
    for start in range(pos + 1, len(data) - HEADER + 1):
        if header_ok(data, start):
            return start
    return len(data)


def records(data: bytes, *, partial_ok: bool = False) -> Iterator[tuple[int, bytes] | Damage]:
    """(offset, data) of every whole record of `data`; Damage for what could not be read."""
    pos = 0
    end = len(data)
    unpack = struct.unpack_from
    while pos < end:
        if pos + HEADER > end:
            if not partial_ok:
                yield Damage(pos, f"the file ends {end - pos} bytes into a record header (cut short)")
            return
        length, length_crc = unpack("<QI", data, pos)
        if length >= MAX_RECORD or masked(data[pos:pos + 8]) != length_crc:
            nxt = _resync(data, pos)
            yield Damage(pos, f"record length checksum mismatch; {nxt - pos} bytes skipped to the next record")
            pos = nxt
            continue
        body_end = pos + HEADER + length
        if body_end + FOOTER > end:
            if not partial_ok:
                yield Damage(pos, f"record of {length} bytes, but the file ends after {end - pos - HEADER} "
                                  "(cut short)")
            return
        body = data[pos + HEADER:body_end]
        if unpack("<I", data, body_end)[0] != masked(body):
            yield Damage(pos, f"record data checksum mismatch; the record ({length} bytes) is skipped")
        else:
            yield pos, body
        pos = body_end + FOOTER
