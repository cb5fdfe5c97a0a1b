"""Foreign RL output formats -> neutral records (see records.py).

`detect(path)` recognises a file or folder by its CONTENT (keys and structure, never file
extensions or version numbers: every tool changed its schema several times). `parse(path)`
streams Events: a RunEvent per ref first, then batches of metrics / rollouts / rewards, and a
Problem for whatever cannot be read. parse() never raises for bad input.

Every format is a `Format` in the registry (registry.py: the shape, `register`, entry points;
_builtin.py: the formats shipped here; _detect.py: detection over the registry). This module keeps
the pseudo-formats: a Git LFS pointer, a zipped folder, a folder of several runs.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..records import Detected, Event, MetricsEvent, Problem, RewardsEvent, RolloutsEvent, RunEvent
from . import registry
from ._builtin import register_builtin
from ._detect import describe, detect, zip_damage
from ._patches import patch_touches_tests
from ._unread import MAX_NAMED
from ._zips import SafeZip, ZipLimits, ZipRejected, rmtree_quiet
from .registry import Format, Parser, Sniff, register

__all__ = ["detect", "parse", "patch_touches_tests", "ZipLimits", "FORMATS", "format_choices", "format_labels", "Format", "Sniff", "register"]

register_builtin()


class _Parsers(Mapping[str, Parser]):
    """FORMATS: name -> parser of every registered format (plugins included), read live."""

    def __getitem__(self, name: str) -> Parser:
        fmt = registry.get(name)
        if fmt is None:
            raise KeyError(name)
        return fmt.parse

    def __iter__(self) -> Iterator[str]:
        return iter(registry.names())

    def __len__(self) -> int:
        return len(registry.names())


FORMATS: Mapping[str, Parser] = _Parsers()


def format_choices() -> list[str]:
    """What `--format` / the upload form accept: every registered format, and "zip" (a zipped folder)."""
    return sorted([*registry.names(), "zip"])


def format_labels() -> list[tuple[str, str]]:
    """(name, label) of the formats people are told about, in registration order."""
    return [(f.name, f.label) for f in registry.formats() if f.label]


def _lfs_problem(path: Path) -> Problem:
    with open(path, "rb") as f:
        text = f.read(1024).decode("utf-8", "replace")
    oid = re.search(r"oid (\S+)", text)
    size = re.search(r"size (\d+)", text)
    return Problem(str(path), None,
                   f"this is a Git LFS pointer, not the data (oid {oid.group(1) if oid else '?'}, "
                   f"size {size.group(1) if size else '?'} bytes): run `git lfs pull` and import the real file",
                   fatal=True)


def _parse_zip(path: Path, partial_ok: bool, limits: ZipLimits | None) -> Iterator[Event]:
    """A folder uploaded as .zip: extract with caps into a temp dir, then parse that folder."""
    tmp = Path(tempfile.mkdtemp(prefix="deeprepo-zip-"))
    try:
        try:
            z = SafeZip(path, limits)
            try:
                z.extract_all(tmp)
            finally:
                z.close()
        except (ZipRejected, zipfile.BadZipFile, OSError) as e:
            yield Problem(str(path), None, f"rejected zip: {e}", fatal=True)
            return
        # a zip of one folder: look inside that folder
        entries = [c for c in tmp.iterdir() if not c.name.startswith("__MACOSX")]
        root = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
        d = detect(root)
        if d is None:
            yield Problem(str(path), None, f"unknown format inside zip: {describe(root)}", fatal=True)
            return
        for ev in _dispatch(d, partial_ok, limits):
            if isinstance(ev, Problem):
                # name the file as the user knows it: inside the uploaded zip
                ev.file = ev.file.replace(str(tmp), str(path) + "!")
            yield ev
    finally:
        rmtree_quiet(tmp)


def _prefixed(events: Iterator[Event], prefix: str) -> Iterator[Event]:
    """Refs are unique per import: a folder of several runs prefixes each part's refs."""
    for ev in events:
        if isinstance(ev, RunEvent | MetricsEvent | RolloutsEvent | RewardsEvent):
            ev.ref = f"{prefix}/{ev.ref}"
            if isinstance(ev, RunEvent) and ev.run.get("parent_ref"):
                ev.run["parent_ref"] = f"{prefix}/{ev.run['parent_ref']}"
        yield ev


def _dispatch(d: Detected, partial_ok: bool, limits: ZipLimits | None) -> Iterator[Event]:
    p = Path(d.path)
    for name in d.details.get("unmatched", [])[:MAX_NAMED]:
        yield Problem(name, None, "not read: no format recognises this file (import it alone to see why)")
    if d.format == "git_lfs_pointer":
        yield _lfs_problem(p)
    elif d.format == "zip":
        yield from _parse_zip(p, partial_ok, limits)
    elif d.format == "multi":
        for i, part in enumerate(d.details.get("parts", [])):
            yield from _prefixed(_dispatch(part, partial_ok, limits), f"{i}:{Path(part.path).name}")
    elif (fmt := registry.get(d.format)) is not None:
        yield from fmt.parse(p, partial_ok=partial_ok, limits=limits)
    else:
        yield Problem(str(p), None, f"no parser for format {d.format!r}", fatal=True)


def parse(path: str | Path, *, fmt: str | None = None, partial_ok: bool = False,
          limits: ZipLimits | None = None, **_options: Any) -> Iterator[Event]:
    """Stream the Events of a file or folder. Bad input becomes Problems; this never raises for it.

    fmt forces a format (a key of FORMATS, or "zip"); partial_ok=True accepts a last JSONL line
    still being written (for `watch`); limits caps zip extraction.
    """
    p = Path(path)
    if not p.exists():
        yield Problem(str(p), None, "no such file or folder", fatal=True)
        return
    try:
        d = Detected(fmt, str(p)) if fmt else detect(p)
    except Exception as e:  # detection reads files: any oddity there is the input's fault
        yield Problem(str(p), None, f"could not inspect input: {type(e).__name__}: {e}", fatal=True)
        return
    if d is None and (damage := zip_damage(p)) is not None:
        yield Problem(str(p), None, f"corrupt zip: it starts like a zip but cannot be opened ({damage}); it was "
                      "probably cut short: send the whole file again",
                      fatal=True)
        return
    if d is None:
        yield Problem(str(p), None, f"unknown format: {describe(p)}; {registry.expected()}", fatal=True)
        return
    try:
        yield from _dispatch(d, partial_ok, limits)
    except Exception as e:
        yield Problem(str(p), None, f"{d.format} parser stopped: {type(e).__name__}: {e}", fatal=True)
