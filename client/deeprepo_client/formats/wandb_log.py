"""The framing of a W&B `.wandb` record log (LevelDB's log format with a W&B file header).

7 bytes of header (`:W&B`, 0xBEE1 little-endian, version 0), then 32 KiB blocks of chunks: a chunk
is a 7-byte header (CRC-32 of the type byte and the data, little-endian; length, uint16; type:
1 full, 2 first, 3 middle, 4 last) and its data; a block's tail shorter than a header is zero
padding. A record is one full chunk or a first, middles and a last. A chunk whose checksum or
framing is wrong loses the rest of its block: reading resumes at the next block, and the damage
is reported with its byte offset.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

MAGIC = b":W&B"
FILE_HEADER = 7
BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


class Damage:
    """Bytes that could not be read as records, from `offset` to the start of the next block."""

    def __init__(self, offset: int, message: str) -> None:
        self.offset = offset
        self.message = message


def is_wandb_log(head: bytes) -> bool:
    return head[:4] == MAGIC and head[4:6] == b"\xe1\xbe"


def _chunks(data: bytes) -> Iterator[tuple[int, int, bytes] | Damage]:
    """(offset, type, data) of each chunk; Damage where a block could not be read on."""
    pos = FILE_HEADER
    while pos < len(data):
        left_in_block = BLOCK - pos % BLOCK
        if left_in_block < CHUNK_HEADER:
            pos += left_in_block  # padding
            continue
        if pos + CHUNK_HEADER > len(data):
            yield Damage(pos, f"{len(data) - pos} bytes at the end are not a whole chunk header (file cut short)")
            return
        crc, size, kind = struct.unpack_from("<IHB", data, pos)
        if crc == 0 and size == 0 and kind == 0:  # zeroed space a writer had reserved
            pos += left_in_block
            continue
        body = data[pos + CHUNK_HEADER: pos + CHUNK_HEADER + size]
        problem = None
        if kind not in (FULL, FIRST, MIDDLE, LAST):
            problem = f"chunk type {kind} is not 1-4"
        elif CHUNK_HEADER + size > left_in_block:
            problem = f"chunk of {size} bytes runs past its 32 KiB block"
        elif len(body) < size:
            problem = f"chunk of {size} bytes but the file ends after {len(body)} (file cut short)"
        elif zlib.crc32(body, zlib.crc32(bytes([kind]))) != crc:
            problem = "checksum mismatch"
        if problem:
            yield Damage(pos, problem)
            pos += left_in_block
            continue
        yield pos, kind, body
        pos += CHUNK_HEADER + size


def records(path: Path) -> Iterator[tuple[int, bytes] | Damage]:
    """(offset of its first chunk, bytes) of every record; Damage for what was skipped."""
    data = path.read_bytes()
    if not is_wandb_log(data):
        yield Damage(0, "not a W&B record log (no ':W&B' header)")
        return
    if data[6] != 0:
        yield Damage(6, f"record log version {data[6]}; version 0 is read, trying anyway")
    parts: list[bytes] = []
    start = 0
    for chunk in _chunks(data):
        if isinstance(chunk, Damage):
            if parts:
                chunk.message += f"; a record begun at byte {start} is lost"
                parts = []
            yield chunk
            continue
        offset, kind, body = chunk
        if kind == FULL:
            yield offset, body
        elif kind == FIRST:
            parts, start = [body], offset
        elif parts:
            parts.append(body)
            if kind == LAST:
                yield start, b"".join(parts)
                parts = []
        else:
            yield Damage(offset, "a middle or last chunk without its first")
    if parts:
        yield Damage(start, "the last record is incomplete (file cut short)")
