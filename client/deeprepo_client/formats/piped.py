"""parse() in a child process, its events sent back over a pipe.

Parsing is pure Python and holds the GIL: in the importer's process it competes with the code
that builds database rows. In a child it runs on the other core. The child is started with
subprocess, not multiprocessing, because Celery's pool processes are daemonic and may not have
multiprocessing children.

    python -m deeprepo_client.formats.piped PATH [--fmt F] [--zip-max-bytes N] [--zip-max-entries N]

writes one pickle per event to its standard output. Only this module's parent reads it.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..records import Event, Problem
from . import ZipLimits, parse


def parse_piped(path: str | Path, *, fmt: str | None = None, limits: ZipLimits | None = None) -> Iterator[Event]:
    """The events of parse(path), parsed in a child process. Never raises for bad input."""
    limits = limits or ZipLimits()
    argv = [sys.executable, "-m", "deeprepo_client.formats.piped", str(path),
            "--zip-max-bytes", str(limits.max_total_bytes), "--zip-max-entries", str(limits.max_entries)]
    if fmt:
        argv += ["--fmt", fmt]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                bufsize=1 << 20)
        assert proc.stdout is not None
        unreadable = ""
        try:
            while True:
                try:
                    event = pickle.load(proc.stdout)
                except EOFError:
                    break
                except Exception as exc:  # noqa: BLE001 - a child killed mid-write leaves half a pickle
                    unreadable = f"{type(exc).__name__}: {exc}"
                    break
                yield event
        finally:
            # Closing the pipe makes a child that is still writing stop (and clean up a zip's
            # temp folder); one that does not is killed.
            proc.stdout.close()
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        if code != 0 or unreadable:
            stderr.seek(0)
            tail = stderr.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
            why = tail[-1] if tail else unreadable or f"exit code {code}"
            yield Problem(str(path), None, f"the parser process stopped ({why}); what came before it was kept",
                          fatal=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--fmt")
    ap.add_argument("--zip-max-bytes", type=int, default=ZipLimits.max_total_bytes)
    ap.add_argument("--zip-max-entries", type=int, default=ZipLimits.max_entries)
    args = ap.parse_args(argv)
    # The pickles get the real stdout to themselves; a stray print anywhere goes to stderr.
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 20)
    os.dup2(2, 1)
    events = parse(args.path, fmt=args.fmt, limits=ZipLimits(args.zip_max_bytes, args.zip_max_entries))
    try:
        for event in events:
            pickle.dump(event, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()
    except BrokenPipeError:  # the importer stopped reading: nothing left to do but clean up
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())  # so the exit's flush finds no pipe
    finally:
        getattr(events, "close")()  # noqa: B009 - a generator: removes a zip's temp folder
    return 0


if __name__ == "__main__":
    sys.exit(main())
