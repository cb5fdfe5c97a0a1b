"""Detection: which registered format a file or folder is, by its CONTENT (keys and structure, never
file extensions or version numbers). Loops over the registry's sniffs in priority order; the
pseudo-formats stay here: git_lfs_pointer (a pointer instead of the data), zip (a folder uploaded
as .zip) and multi (a folder of several runs).
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

from ..records import Detected
from . import registry
from ._json import LFS_PREFIX
from ._unread import DATA_SUFFIXES

HEAD_BYTES = 8 << 20  # how much of a pretty-printed JSON document we scan for its top-level keys
MAX_WALK = 5000  # files looked at when a folder holds several runs

# A quoted string (with an optional ':' that makes it a key) or a bracket; strings are skipped whole,
# so a megabyte of base64 inside a value costs one regex step.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*:?|[{}\[\]]')


def json_keys(head: bytes) -> tuple[set[str], set[str]]:
    """Keys at depth 1 and depth 2 of the JSON document that starts `head` (which may be cut short)."""
    stack: list[int] = []
    k1: set[str] = set()
    k2: set[str] = set()
    for m in _TOKEN.finditer(head):
        t = m.group()
        c = t[0]
        if c in b"{[":
            stack.append(c)
        elif c in b"}]":
            if stack:
                stack.pop()
            if not stack:
                break
        elif t.endswith(b":") and stack and stack[-1] == ord("{") and len(stack) <= 2:
            key = t[1:t.rindex(b'"')].decode("utf-8", "replace")
            (k1 if len(stack) == 1 else k2).add(key)
    return k1, k2


def first_line_keys(path: Path) -> tuple[set[str], bool]:
    """Keys of the first line when it is a complete JSON object (JSON lines, or a one-line document)."""
    with open(path, "rb") as f:
        first = f.readline(HEAD_BYTES)
    try:
        obj = json.loads(first)
    except ValueError:
        return set(), False
    return (set(obj) if isinstance(obj, dict) else set()), isinstance(obj, dict)


def _by_head(path: Path, head: bytes) -> Detected | None:
    for sniff, fmt in registry.sniffs("head"):
        assert sniff.head is not None
        found = sniff.head(path, head)
        if isinstance(found, Detected):
            return found
        if found:
            return Detected(fmt.name, str(path))
    return None


def _by_keys(path: Path, head: bytes) -> Detected | None:
    keys, one_line = first_line_keys(path)
    k1, k2 = json_keys(head)
    if one_line:
        k1 = keys
    for sniff, fmt in registry.sniffs("keys"):
        assert sniff.keys is not None
        if sniff.keys(k1, k2):
            if one_line and fmt.confirm_line and not fmt.confirm_line(path):
                return None
            return Detected(fmt.name, str(path))
    return None


def detect_file(path: Path) -> Detected | None:
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if head.startswith(LFS_PREFIX):
        return Detected("git_lfs_pointer", str(path), {"pointer": head[:300].decode("utf-8", "replace")})
    found = _by_head(path, head)
    if found:
        return found
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except (zipfile.BadZipFile, OSError):
            return None
        return Detected("zip", str(path), {"entries": len(names)})
    if not head.lstrip().startswith(b"{"):
        return None
    return _by_keys(path, head)


def detect_folder_as_one(path: Path) -> Detected | None:
    """A folder that is one run in a known layout."""
    names = {p.name for p in path.iterdir()}
    for sniff, fmt in registry.sniffs("folder"):
        assert sniff.folder is not None
        if sniff.folder(path, names):
            return Detected(fmt.name, str(path))
    return None


def _detect_dir(path: Path) -> Detected | None:
    d = detect_folder_as_one(path)
    if d:
        return d
    parts: list[Detected] = []
    unmatched: list[str] = []  # data files no format recognised: reported by the dispatcher
    reports = False
    seen = 0
    stack = [path]
    while stack and seen < MAX_WALK:
        folder = stack.pop()
        for child in sorted(folder.iterdir()):
            seen += 1
            if child.name.startswith("."):
                continue
            if child.is_dir():
                sub = detect_folder_as_one(child)
                if sub is None:
                    stack.append(child)
                elif sub.format == "swebench_reports":
                    reports = True  # one run for the whole logs/run_evaluation tree
                else:
                    parts.append(sub)
            elif child.is_file():
                f = detect_file(child)
                if f and f.format not in ("git_lfs_pointer", "zip"):
                    parts.append(f)
                elif f is None and child.suffix in DATA_SUFFIXES:
                    unmatched.append(str(child))
    if reports:
        parts.append(Detected("swebench_reports", str(path)))
    found: Detected | None = None
    if len(parts) == 1:
        found = parts[0]
    elif parts and all(p.format == "tensorboard" for p in parts):
        found = Detected("tensorboard", str(path))  # a logdir: one import, runs named by their folders
    elif parts:
        found = Detected("multi", str(path), {"parts": parts})
    if found is not None and unmatched:
        found.details["unmatched"] = unmatched
    return found


def detect(path: str | Path) -> Detected | None:
    p = Path(path)
    try:
        if p.is_dir():
            return _detect_dir(p)
        if p.is_file():
            return detect_file(p)
    except OSError:
        return None
    return None


def zip_damage(p: Path) -> str | None:
    """Why a file that starts like a zip cannot be opened as one (cut short by an upload, a copy
    that stopped), or None when it is no zip or opens fine."""
    try:
        if not p.is_file():
            return None
        with open(p, "rb") as f:
            magic = f.read(4)
        if magic not in (b"PK\x03\x04", b"PK\x05\x06"):
            return None
        with zipfile.ZipFile(p):
            return None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as e:
        return str(e) or type(e).__name__


def describe(p: Path) -> str:
    """What an unknown input looks like, for the fatal Problem."""
    try:
        if p.is_dir():
            names = sorted(c.name for c in p.iterdir())[:20]
            return f"a folder holding {names}"
        with open(p, "rb") as f:
            head = f.read(HEAD_BYTES)
        if head.lstrip().startswith(b"{"):
            keys, one = first_line_keys(p)
            k1 = keys if one else json_keys(head)[0]
            return f"a JSON object with keys {sorted(k1)[:30]}"
        if head.lstrip().startswith(b"["):
            return "a JSON array"
        if b"\x00" in head[:4096]:
            return f"binary data starting {head[:8]!r}"
        return f"text starting {head[:80].decode('utf-8', 'replace')!r}"
    except OSError as e:
        return f"unreadable ({e})"
