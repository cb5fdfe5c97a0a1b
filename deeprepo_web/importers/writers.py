"""Storing rollout batches: a refused batch is cleaned, then split, so good rollouts stay and each bad
one is named; big imports store from writer threads on connections of their own."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, connection, transaction

from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import IngestError
from deeprepo_web.text import clean_deep

# What a batch that Postgres (or the ingest service) refused raises: reported, and the import goes on.
REFUSED = (IngestError, DatabaseError, ValueError, TypeError, KeyError)


def _rollouts_store(run: Run, records: list[dict[str, Any]]) -> int:
    with batch_transaction():
        return rollouts_ingest(run=run, rollouts=records)


def rollouts_save(run: Run, records: list[dict[str, Any]]) -> tuple[int, list[tuple[str, Exception]]]:
    """Store one batch; returns (rollouts stored, [(which rollout, why refused)])."""
    try:
        return _rollouts_store(run, records), []
    except REFUSED:
        pass
    # Postgres refuses NUL bytes and lone surrogates in text; model output has both. Cleaning
    # every batch up front costs a deep copy, so only a refused batch pays for it.
    cleaned = clean_deep(records)
    try:
        return _rollouts_store(run, cleaned), []
    except REFUSED:
        pass
    # Still refused: one by one, so the good rollouts stay and each bad one is named.
    stored = 0
    refused: list[tuple[str, Exception]] = []
    for r in cleaned:
        try:
            stored += _rollouts_store(run, [r])
        except REFUSED as exc:
            refused.append((f"rollout of example {str(r.get('example_key'))[:80]!r} (sample {r.get('sample_index')})", exc))
    return stored, refused


class Writers:
    """Threads that store rollout batches, each on its own connection (a context manager: leaving it
    stops them).

    One thread alternates Python (building rows) with waiting for Postgres; with several, one builds
    while the others' batches are in Postgres, so the importer and its Postgres backends use every
    core. Results come back to the importing thread, which owns the report.
    """

    def __init__(self, threads: int) -> None:
        # One batch waits while every thread works on one: enough to keep them busy, and few batches in memory.
        self.todo: queue.Queue[tuple[str, Run, list[dict[str, Any]]] | None] = queue.Queue(maxsize=1)
        self.results: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.sent = self.received = 0
        self.threads = [threading.Thread(target=self._work, name=f"deeprepo-import-write-{i}", daemon=True)
                        for i in range(threads)]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        try:
            while (item := self.todo.get()) is not None:
                ref, run, records = item
                try:
                    outcome: Any = rollouts_save(run, records)
                except BaseException as exc:  # a bug: handed to the importing thread, which raises it
                    outcome = exc
                self.results.put((ref, outcome))
        finally:
            connection.close()  # this thread's own connection

    def submit(self, ref: str, run: Run, records: list[dict[str, Any]]) -> None:
        self.todo.put((ref, run, records))
        self.sent += 1

    def _take(self, block: bool) -> Iterator[tuple[str, tuple[int, list[tuple[str, Exception]]]]]:
        while self.received < self.sent:
            try:
                ref, outcome = self.results.get(block=block)
            except queue.Empty:
                return
            self.received += 1
            if isinstance(outcome, BaseException):
                raise outcome
            yield ref, outcome

    def done(self) -> Iterator[tuple[str, tuple[int, list[tuple[str, Exception]]]]]:
        return self._take(block=False)

    def drain(self) -> Iterator[tuple[str, tuple[int, list[tuple[str, Exception]]]]]:
        return self._take(block=True)

    def __enter__(self) -> Writers:
        return self

    def __exit__(self, *exc: object) -> None:
        for _ in self.threads:
            self.todo.put(None)
        for t in self.threads:
            t.join(timeout=300)


@contextmanager
def batch_transaction() -> Iterator[None]:
    """One batch's transaction, committed without waiting for its log to reach the disk.

    The usual setting for a bulk load: a crash loses at most the last batches, which the file still
    holds and a re-import stores without doubling anything. Waiting for the disk at every batch
    was a quarter of the import time; Importer.finish waits once for all of them.
    """
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit = off")
        yield
