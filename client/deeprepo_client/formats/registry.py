"""The format registry: every format (built in or a plugin's) is one `Format`, and detection,
`--format` choices, the "expected one of" message, the upload page and `deeprepo import --help`
all read the one ordered list kept here.

A format recognises its input in up to three ways, each a plain function:
  head(path, head_bytes)  -> bool | Detected   the first 8 MiB of a file (magic bytes, SQLite, zips)
  keys(k1, k2)            -> bool              keys of a JSON document at depth 1 and 2, or of the
                                               first line of a JSON-lines file (k1; k2 from the head)
  folder(path, names)     -> bool              a folder's layout (`names`: the names in it)
A `Sniff` holds one such test and its priority; a format lists its sniffs. Detection tries, for
each way, every registered sniff in priority order (lower first) and takes the first that
answers. Each way has its own order (see _builtin.py for the numbers the built-in formats use:
head 10-50, keys 100-250, folder 100-240); pick a number between two to slot a format in.
`parse(path, partial_ok=..., limits=...)` streams Events and never raises for bad input.

Third parties register with `register(Format(...))`, or by naming a Format (or a list of them)
in the `deeprepo.formats` entry point group; entry points are loaded once, on first use, and a
broken plugin is logged and skipped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from ..records import Detected, Event

ENTRY_POINT_GROUP = "deeprepo.formats"

Parser = Callable[..., Iterator[Event]]
HeadTest = Callable[[Path, bytes], "bool | Detected | None"]
KeysTest = Callable[[set[str], set[str]], bool]
FolderTest = Callable[[Path, set[str]], bool]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sniff:
    """One way of recognising a format, at its place in the detection order."""
    priority: int
    head: HeadTest | None = None
    keys: KeysTest | None = None
    folder: FolderTest | None = None


@dataclass(frozen=True)
class Format:
    """A format: its name (the `--format` value), a label for people, how it is recognised, its parser.

    confirm_line: for a one-line JSON file matched by `keys`, a second look at the whole first
    object; False makes the file unknown (e.g. prime-rl's metrics lines hold only numbers).
    """
    name: str
    label: str  # "" keeps it out of the "expected one of" list (e.g. refusals such as pickles)
    parse: Parser
    sniffs: tuple[Sniff, ...] = ()  # none: only reachable through --format
    confirm_line: Callable[[Path], bool] | None = None


_formats: dict[str, Format] = {}
_plugins_loaded = False
_lock = threading.Lock()
plugin_errors: list[str] = []  # what went wrong loading entry points, for whoever wants to show it


def register(fmt: Format) -> Format:
    """Add (or replace, by name) a format. Returns it, so a module can write FORMAT = register(...)."""
    if not isinstance(fmt, Format):
        raise TypeError(f"register() takes a Format, not {type(fmt).__name__}")
    _formats[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    _formats.pop(name, None)


def _load_plugins() -> None:
    global _plugins_loaded
    with _lock:
        if _plugins_loaded:
            return
        _plugins_loaded = True
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                loaded: Any = ep.load()
                for fmt in (loaded if isinstance(loaded, list | tuple) else [loaded]):
                    register(fmt)
            except Exception as e:  # a plugin's bug must not stop imports of the other formats
                msg = f"format plugin {ep.name!r} ({ep.value}) not loaded: {type(e).__name__}: {e}"
                plugin_errors.append(msg)
                log.warning(msg)


def reload_plugins() -> None:
    """Look at the entry points again (after installing a plugin in a running process; tests)."""
    global _plugins_loaded
    _plugins_loaded = False
    _load_plugins()


def formats() -> list[Format]:
    """Every format, in registration order (built-ins first)."""
    _load_plugins()
    return list(_formats.values())


def get(name: str) -> Format | None:
    _load_plugins()
    return _formats.get(name)


def names() -> list[str]:
    return sorted(f.name for f in formats())


def sniffs(kind: str) -> list[tuple[Sniff, Format]]:
    """The tests of one kind ("head", "keys" or "folder") with their format, in detection order."""
    found = [(s, f) for f in formats() for s in f.sniffs if getattr(s, kind) is not None]
    return sorted(found, key=lambda sf: sf[0].priority)


def labels() -> list[str]:
    return [f.label for f in formats() if f.label]


def expected() -> str:
    """The end of the "unknown format" message: what deeprepo can read."""
    return "expected one of: " + ", ".join(labels())
