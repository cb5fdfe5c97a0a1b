"""import_path: a file or folder -> deeprepo_client.formats events -> the importer -> the runs tables.

The parsers know the formats and the ingest services know the tables; this module runs the two
together: parsing in a thread (or a child process for big inputs) while batches are stored.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

from deeprepo_client.formats import ZipLimits, detect, parse
from deeprepo_client.formats.piped import parse_piped
from deeprepo_client.records import MediaEvent, MetricsEvent, Problem, RewardsEvent, RolloutsEvent, RunEvent
from deeprepo_web.accounts.models import Project
from deeprepo_web.importers.importer import Importer
from deeprepo_web.importers.report import ImportReport
from deeprepo_web.importers.writers import Writers

PROGRESS_EVERY = 1.0  # seconds between progress callbacks

Progress = Callable[[int], None]


_DONE = object()


def _prefetched(events: Iterator[Any], depth: int = 4) -> Iterator[Any]:
    """Parse in a thread while this one writes: JSON decoding runs while Postgres works on the last batch.

    The parser never touches the database; a bounded queue keeps at most `depth` batches in memory.
    """
    q: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for ev in events:
                while not stop.is_set():
                    try:
                        q.put(ev, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
        except BaseException as exc:  # handed to the consumer, which re-raises it
            q.put(exc)
        finally:
            if not stop.is_set():
                q.put(_DONE)
            close = getattr(events, "close", None)
            if close is not None:
                close()  # a zip's temp folder is removed by the generator's cleanup

    thread = threading.Thread(target=produce, name="deeprepo-import-parse", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join(timeout=30)


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """A big import makes millions of short-lived containers (the parsed rollouts): Python's cyclic
    collector kept walking them, a fifth of the import time. They hold no cycles (nor does the
    importer: see _CallRows), so reference counting frees them; the collector resumes after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _input_bytes(p: Path) -> int:
    try:
        if p.is_dir():
            return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
        return p.stat().st_size
    except OSError:
        return 0  # parse() says what is wrong with it



def _displayer(root: Path | None, shown_as: str | None) -> Callable[[str], str]:
    """File names as the user knows them: relative to the upload folder, never our disk layout."""
    if root is None:
        return lambda p: p
    prefix = str(root)

    def display(p: str) -> str:
        if p.startswith(prefix):
            rest = p[len(prefix):].lstrip("/")
            return rest or (shown_as or Path(p).name)
        return p

    return display


def _consume(imp: Importer, report: ImportReport, events: Iterable[Any], progress: Progress | None,
             display: Callable[[str], str]) -> None:
    """Hand every event to the importer; Problems go to the report."""
    last_tick = time.monotonic()
    for ev in events:
        if isinstance(ev, Problem):
            report.problem(display(ev.file), ev.line, ev.message, ev.fatal)
        elif isinstance(ev, RunEvent):
            imp.run_event(ev)
        elif isinstance(ev, MetricsEvent):
            imp.metrics(ev)
            report.rows += len(ev.points)
        elif isinstance(ev, RolloutsEvent):
            imp.rollouts(ev)
            report.rows += len(ev.rollouts)
        elif isinstance(ev, MediaEvent):
            imp.media(ev)
        elif isinstance(ev, RewardsEvent):
            imp.drain()  # rewards look for rollouts: every batch before them is stored first
            imp.rewards(ev)
        if progress is not None and time.monotonic() - last_tick >= PROGRESS_EVERY:
            last_tick = time.monotonic()
            progress(report.rows)
    imp.drain()


def import_events(*, project: Project, events: Iterable[Any], label: str, fmt: str,
                  progress: Progress | None = None) -> ImportReport:
    """Import events that come from somewhere other than a file (a tracking server's API)."""
    start = time.monotonic()
    report = ImportReport(path=label)
    report.format = fmt
    imp = Importer(project, report, lambda p: p)
    _consume(imp, report, _prefetched(iter(events)), progress, lambda p: p)
    imp.finish(had_problems=report.problems_total > 0)
    report.seconds = time.monotonic() - start
    return report


def import_path(
    *,
    project: Project,
    path: str | Path,
    fmt: str | None = None,
    progress: Progress | None = None,
    display_root: str | Path | None = None,
    display_name: str | None = None,
) -> ImportReport:
    """Import a file or folder into `project`. Never raises for bad input: it lands in the report."""
    start = time.monotonic()
    p = Path(path)
    display = _displayer(Path(display_root) if display_root else None, display_name)
    report = ImportReport(path=str(p))
    if fmt is None:
        detected = detect(p) if p.exists() else None
        report.format = detected.format if detected else None
    else:
        report.format = fmt
    imp = Importer(project, report, display)
    limits = ZipLimits(max_total_bytes=settings.DEEPREPO_IMPORT_MAX_UNZIPPED_BYTES,
                       max_entries=settings.DEEPREPO_IMPORT_MAX_ZIP_ENTRIES)
    # Big inputs parse in a child process, on the other core; starting one costs ~0.1 s.
    big = _input_bytes(p) >= settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES
    source = parse_piped(p, fmt=fmt, limits=limits) if big else parse(p, fmt=fmt, limits=limits)
    events: Iterable[Any] = _prefetched(source)
    # Big inputs store their rollouts from threads on connections of their own, so never inside a
    # caller's transaction (they could not see its rows).
    if big and settings.DEEPREPO_IMPORT_WRITERS > 0 and not connection.in_atomic_block:
        imp.writers = Writers(threads=settings.DEEPREPO_IMPORT_WRITERS)
    with _without_cyclic_gc() if big else nullcontext(), imp.writers or nullcontext():
        _consume(imp, report, events, progress, display)
    imp.finish(had_problems=report.problems_total > 0)
    report.path = display(str(p))
    report.seconds = time.monotonic() - start
    if progress is not None:
        progress(report.rows)
    return report

