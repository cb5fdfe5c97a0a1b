"""Imports: a file or folder -> deeprepo_client.formats events -> runs.services.

Thin on purpose: the parsers know the formats, runs.services knows the tables. What lives here is
the glue: one Run per parser ref (found again by (source, external_id) on a re-import), every batch
its own transaction (a bad batch is reported and the others stay), SWE-bench rewards attached to
rollouts the project already has, and a report a person can act on (file:line and what was wrong).
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import logging
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from deeprepo_client.formats import ZipLimits, detect, parse, patch_touches_tests
from deeprepo_client.formats.piped import parse_piped
from deeprepo_client.records import MetricsEvent, Problem, RewardsEvent, RolloutsEvent, RunEvent
from deeprepo_web.accounts.models import Project
from deeprepo_web.importers.models import ImportJob, ImportStatus
from deeprepo_web.runs import services as runs
from deeprepo_web.runs.models import Run, RunKind, RunStatus
from deeprepo_web.text import clean_deep

log = logging.getLogger(__name__)

MAX_PROBLEMS = 500  # kept in the report; the rest are counted
PROGRESS_EVERY = 1.0  # seconds between progress callbacks

# Shown on a queued job whose task message could not be sent (cleared once it is).
QUEUE_AWAY = "The task queue is unreachable; the import will start once it is back."
RESEND_BATCH = 100  # jobs re-sent per beat pass

Progress = Callable[[int], None]
# What a batch that Postgres (or the ingest service) refused raises: reported, and the import goes on.
_REFUSED = (runs.IngestError, DatabaseError, ValueError, TypeError, KeyError)


@dataclass
class RunReport:
    ref: str
    name: str
    public_id: str = ""
    kind: str = ""
    created: bool = False
    rollouts_received: int = 0
    rollouts: int = 0  # new rows stored
    points: int = 0  # new metric values stored
    rewards_attached: int = 0  # rollouts of this run that got a reward from another file


@dataclass
class ImportReport:
    path: str
    format: str | None = None
    runs: list[RunReport] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    problems_total: int = 0
    rows: int = 0  # rollouts + metric points read
    seconds: float = 0.0

    @property
    def imported_anything(self) -> bool:
        return bool(self.runs)

    @property
    def fatal(self) -> bool:
        return any(p.get("fatal") for p in self.problems)

    def problem(self, file: str, line: int | None, message: str, fatal: bool = False) -> None:
        self.problems_total += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"file": file, "line": line, "message": message, "fatal": fatal})

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "runs": [{**asdict(r), "already": r.rollouts_received - r.rollouts} for r in self.runs],
            "problems": self.problems,
            "problems_total": self.problems_total,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
        }


def _ts(value: Any) -> datetime | None:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    return None


class _Importer:
    """State of one import: refs -> runs, made lazily so a reward-only file creates no empty run."""

    def __init__(self, project: Project, report: ImportReport, display: Callable[[str], str]) -> None:
        self.project = project
        self.report = report
        self.display = display
        self.records: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, Run] = {}
        self.by_ref: dict[str, RunReport] = {}
        self.matched: dict[str, set[str]] = {}  # ref -> example keys whose rewards went to other runs
        self.rep_by_pk: dict[int, RunReport] = {}
        self.writers: _Writers | None = None

    # ------------------------------------------------------------ runs

    def run_event(self, ev: RunEvent) -> None:
        record = clean_deep(dict(ev.run))
        self.records[ev.ref] = record
        self.by_ref[ev.ref] = RunReport(ref=ev.ref, name=str(record.get("name") or ev.ref)[:500],
                                        kind=str(record.get("kind") or RunKind.TRAIN))

    def run_for(self, ref: str) -> Run:
        run = self.runs.get(ref)
        if run is not None:
            return run
        record = self.records.get(ref)
        if record is None:  # a parser bug, but never lose the data: a run named after the ref
            self.run_event(RunEvent(ref, {"name": ref}))
            record = self.records[ref]
        parent = self.run_for(record["parent_ref"]) if record.get("parent_ref") in self.records else None
        name = self.by_ref[ref].name
        source = str(record.get("source") or "import")[:32]
        external_id = str(record.get("external_id") or name)[:200]
        fields: dict[str, Any] = {
            "kind": record.get("kind") if record.get("kind") in RunKind.values else RunKind.TRAIN,
            "status": record.get("status") if record.get("status") in RunStatus.values else RunStatus.FINISHED,
            "model": str(record.get("model") or "")[:500],
            "adapter": str(record.get("adapter") or "")[:500],
            "environment": str(record.get("environment") or "")[:500],
            "method": str(record.get("method") or "")[:100],
            "config": record.get("config") if isinstance(record.get("config"), dict) else {},
            "tags": [str(t)[:200] for t in record.get("tags") or []],
            "notes": str(record.get("notes") or ""),
            "checkpoint_step": record.get("checkpoint_step") if isinstance(record.get("checkpoint_step"), int) else None,
            "summary": record.get("summary") if isinstance(record.get("summary"), dict) else {},
        }
        run, created = runs.run_create(
            project=self.project, name=name, source=source, external_id=external_id, parent=parent,
            started_at=_ts(record.get("started_at")), finished_at=_ts(record.get("finished_at")), **fields,
        )
        if not created:
            # The same file (or a newer copy of it) again: refresh what the file says about the run.
            changes = {k: v for k, v in fields.items() if k not in ("notes", "tags") and v not in ("", None, {})}
            if changes.get("summary"):
                changes["summary"] = {**run.summary, **changes["summary"]}
            if parent is not None:
                changes["parent"] = parent
            runs.run_update(run=run, **changes)
        rep = self.by_ref[ref]
        rep.public_id, rep.created, rep.kind = run.public_id, created, run.kind
        self.runs[ref] = run
        self.rep_by_pk[run.pk] = rep
        self.report.runs.append(rep)
        return run

    def finish(self, had_problems: bool) -> None:
        """Runs the file announced but sent no rows for: made only when nothing went wrong."""
        for ref in self.records:
            if ref in self.runs or ref in self.matched or had_problems:
                continue
            self.run_for(ref)
        # The batches committed without waiting for the disk (_batch_transaction). This write
        # commits the ordinary way, and Postgres flushes its log in order: once it returns, every
        # batch before it is on disk too, so nothing is reported that a crash could still take.
        if self.runs:
            Run.objects.filter(pk__in=[run.pk for run in self.runs.values()]).update(updated_at=timezone.now())

    # ------------------------------------------------------------ rows

    def _batch_problem(self, ref: str, what: str, exc: Exception) -> None:
        self.report.problem(self.display(self.report.path), None,
                            f"run {self.by_ref[ref].name!r}: {what} not stored: {_exc_line(exc)}")

    def metrics(self, ev: MetricsEvent) -> None:
        run = self.run_for(ev.ref)
        try:
            with _batch_transaction():
                self.by_ref[ev.ref].points += runs.metrics_ingest(run=run, points=ev.points)  # type: ignore[arg-type]
        except _REFUSED as exc:
            runs._known_series.clear()  # the failed batch's series rows were rolled back with it
            steps = [p["step"] for p in ev.points if isinstance(p, dict) and isinstance(p.get("step"), int)]
            where = f"{len(ev.points)} metric rows (steps {min(steps)}–{max(steps)})" if steps else "metric rows"
            self._batch_problem(ev.ref, where, exc)

    def rollouts(self, ev: RolloutsEvent) -> None:
        records = ev.rollouts
        skip = self.matched.get(ev.ref)
        if skip:  # SWE-bench: these instances' results went onto the rollouts that produced them
            records = [r for r in records if r.get("example_key") not in skip]
            if not records:
                return
        run = self.run_for(ev.ref)
        self.by_ref[ev.ref].rollouts_received += len(records)
        if self.writers is None:
            self._stored(ev.ref, _rollouts_save(run, records))  # type: ignore[arg-type]
        else:
            self.writers.submit(ev.ref, run, records)  # type: ignore[arg-type]
            for ref, outcome in self.writers.done():
                self._stored(ref, outcome)

    def drain(self) -> None:
        """Wait for the batches the writer threads still hold (before rewards look up rollouts, and at the end)."""
        if self.writers is not None:
            for ref, outcome in self.writers.drain():
                self._stored(ref, outcome)

    def _stored(self, ref: str, outcome: tuple[int, list[tuple[str, Exception]]]) -> None:
        stored, refused = outcome
        self.by_ref[ref].rollouts += stored
        for what, exc in refused:
            self._batch_problem(ref, what, exc)

    def rewards(self, ev: RewardsEvent) -> None:
        """Attach results (SWE-bench) to the rollouts that produced them, matched by example key.

        For each instance: the most recent run of the project (other than this file's own run)
        holding a rollout of that example gets the reward on all its rollouts of it.
        """
        record = self.records.get(ev.ref, {})
        own_source = str(record.get("source") or "")
        own_external = str(record.get("external_id") or "")
        hashes = {hashlib.sha256(str(k).encode("utf-8", "replace")).hexdigest(): str(k) for k in ev.by_example}
        if not hashes:
            return
        with connection.cursor() as cur:
            # Rollouts of those examples in each example's most recent run (not this file's own run).
            cur.execute(
                """
                WITH cand AS (
                    SELECT e.key_hash, r.id AS run_id, r.created_at
                    FROM runs_example e
                    JOIN runs_rollout ro ON ro.example_id = e.id
                    JOIN runs_run r ON r.id = ro.run_id
                    WHERE e.project_id = %s AND e.key_hash = ANY(%s)
                      AND NOT (r.source = %s AND r.external_id = %s)
                    GROUP BY e.key_hash, r.id, r.created_at
                ), best AS (
                    SELECT DISTINCT ON (key_hash) key_hash, run_id FROM cand ORDER BY key_hash, created_at DESC, run_id DESC
                )
                SELECT best.key_hash, ro.id, ro.run_id, ro.final_answer, ro.reward_components, ro.metrics
                FROM best JOIN runs_example e ON e.key_hash = best.key_hash AND e.project_id = %s
                JOIN runs_rollout ro ON ro.example_id = e.id AND ro.run_id = best.run_id
                """,
                [self.project.pk, list(hashes), own_source, own_external, self.project.pk],
            )
            rows = cur.fetchall()
        if not rows:
            return
        updates: list[tuple[int, float | None, str, str]] = []
        per_run: dict[int, int] = {}
        matched = self.matched.setdefault(ev.ref, set())
        for key_hash, rollout_id, run_id, final_answer, comps, metrics in rows:
            key = hashes[key_hash]
            result = ev.by_example[key]
            # Django's connection hands jsonb back as text
            comps = json.loads(comps) if isinstance(comps, str) else comps
            metrics = json.loads(metrics) if isinstance(metrics, str) else metrics
            new_metrics = {**(metrics or {}), **(result.get("metrics") or {})}
            if "touches_tests" not in new_metrics and final_answer and "diff" in final_answer[:4096]:
                new_metrics["touches_tests"] = patch_touches_tests(final_answer)
            new_comps = {**(comps or {}), **(result.get("reward_components") or {})}
            updates.append((rollout_id, result.get("reward"), runs._dumps(clean_deep(new_comps)),
                            runs._dumps(clean_deep(new_metrics))))
            per_run[run_id] = per_run.get(run_id, 0) + 1
            matched.add(key)
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(
                "UPDATE runs_rollout AS ro SET reward = u.rw, reward_components = u.rc::jsonb, metrics = u.m::jsonb "
                "FROM unnest(%s::bigint[], %s::float8[], %s::text[], %s::text[]) AS u(id, rw, rc, m) "
                "WHERE ro.id = u.id",
                [[u[0] for u in updates], [u[1] for u in updates], [u[2] for u in updates], [u[3] for u in updates]],
            )
        for run_id, n in per_run.items():
            rep = self.rep_by_pk.get(run_id)
            if rep is None:
                target = Run.objects.get(pk=run_id)
                rep = RunReport(ref=f"rewards:{target.public_id}", name=target.name, public_id=target.public_id,
                                kind=target.kind)
                self.rep_by_pk[run_id] = rep
                self.report.runs.append(rep)
            rep.rewards_attached += n


def _rollouts_store(run: Run, records: list[dict[str, Any]]) -> int:
    with _batch_transaction():
        return runs.rollouts_ingest(run=run, rollouts=records)


def _rollouts_save(run: Run, records: list[dict[str, Any]]) -> tuple[int, list[tuple[str, Exception]]]:
    """Store one batch; returns (rollouts stored, [(which rollout, why refused)])."""
    try:
        return _rollouts_store(run, records), []
    except _REFUSED:
        pass
    # Postgres refuses NUL bytes and lone surrogates in text; model output has both. Cleaning
    # every batch up front costs a deep copy, so only a refused batch pays for it.
    cleaned = clean_deep(records)
    try:
        return _rollouts_store(run, cleaned), []
    except _REFUSED:
        pass
    # Still refused: one by one, so the good rollouts stay and each bad one is named.
    stored = 0
    refused: list[tuple[str, Exception]] = []
    for r in cleaned:
        try:
            stored += _rollouts_store(run, [r])
        except _REFUSED as exc:
            refused.append((f"rollout of example {str(r.get('example_key'))[:80]!r} (sample {r.get('sample_index')})", exc))
    return stored, refused


class _Writers:
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
                    outcome: Any = _rollouts_save(run, records)
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

    def __enter__(self) -> _Writers:
        return self

    def __exit__(self, *exc: object) -> None:
        for _ in self.threads:
            self.todo.put(None)
        for t in self.threads:
            t.join(timeout=300)


@contextmanager
def _batch_transaction() -> Iterator[None]:
    """One batch's transaction, committed without waiting for its log to reach the disk.

    The usual setting for a bulk load: a crash loses at most the last batches, which the file still
    holds and a re-import stores without doubling anything. Waiting for the disk at every batch
    was a quarter of the import time; _Importer.finish waits once for all of them.
    """
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit = off")
        yield


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


def _exc_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:500]


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
    report.path = str(p)
    if fmt is None:
        detected = detect(p) if p.exists() else None
        report.format = detected.format if detected else None
    else:
        report.format = fmt
    imp = _Importer(project, report, display)
    limits = ZipLimits(max_total_bytes=settings.DEEPREPO_IMPORT_MAX_UNZIPPED_BYTES,
                       max_entries=settings.DEEPREPO_IMPORT_MAX_ZIP_ENTRIES)
    last_tick = time.monotonic()
    # Big inputs parse in a child process, on the other core; starting one costs ~0.1 s.
    big = _input_bytes(p) >= settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES
    source = parse_piped(p, fmt=fmt, limits=limits) if big else parse(p, fmt=fmt, limits=limits)
    events: Iterable[Any] = _prefetched(source)
    # Big inputs store their rollouts from threads on connections of their own, so never inside a
    # caller's transaction (they could not see its rows).
    if big and settings.DEEPREPO_IMPORT_WRITERS > 0 and not connection.in_atomic_block:
        imp.writers = _Writers(threads=settings.DEEPREPO_IMPORT_WRITERS)
    with _without_cyclic_gc() if big else nullcontext(), imp.writers or nullcontext():
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
            elif isinstance(ev, RewardsEvent):
                imp.drain()  # rewards look for rollouts: every batch before them is stored first
                imp.rewards(ev)
            if progress is not None and time.monotonic() - last_tick >= PROGRESS_EVERY:
                last_tick = time.monotonic()
                progress(report.rows)
        imp.drain()
    imp.finish(had_problems=report.problems_total > 0)
    report.path = display(str(p))
    report.seconds = time.monotonic() - start
    if progress is not None:
        progress(report.rows)
    return report


# ---------------------------------------------------------------- upload jobs


def _uploads_root() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def upload_store(files: list[tuple[str, Iterable[bytes]]]) -> tuple[Path, int]:
    """Save uploaded files under DATA_DIR/uploads/<content hash>/ and return (what to import, bytes).

    The folder is named by the content: uploading the same files again gives the same paths, so
    parsers that name runs after their folder find the same runs (and nothing is doubled).
    """
    root = _uploads_root()
    tmp = root / f".incoming-{time.time_ns()}"
    tmp.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    total = 0
    names: list[str] = []
    try:
        for raw_name, chunks in files:
            name = _safe_name(raw_name, names)
            names.append(name)
            digest.update(name.encode() + b"\x00")
            with open(tmp / name, "wb") as out:
                for chunk in chunks:
                    digest.update(chunk)
                    total += len(chunk)
                    if total > settings.DEEPREPO_IMPORT_MAX_UPLOAD_BYTES:
                        raise UploadTooLarge(
                            f"upload is larger than {settings.DEEPREPO_IMPORT_MAX_UPLOAD_BYTES} bytes"
                        )
                    out.write(chunk)
        hexdigest = digest.hexdigest()
        # Several files are one folder; parsers name runs after their folder, so it gets a short id
        # the way vf-eval names its output folders (<env>--<model>/<8 hex>).
        final = root / hexdigest[:24]
        inner = final if len(names) == 1 else final / hexdigest[:8]
        if final.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            inner.parent.mkdir(parents=True, exist_ok=True)
            tmp.rename(inner)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    target = inner / names[0] if len(names) == 1 else inner
    return target, total


class UploadTooLarge(ValueError):
    pass


def _safe_name(raw: str, taken: list[str]) -> str:
    # Browsers send a base name; never trust it to stay inside the folder.
    name = Path(raw.replace("\\", "/")).name.strip() or "upload"
    name = name.lstrip(".") or "upload"
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{n}-{base}"
    return name[:200]


def import_job_create(*, project: Project, user: Any, files: list[tuple[str, Iterable[bytes]]],
                      fmt: str = "") -> ImportJob:
    path, size = upload_store(files)
    shown = files[0][0] if len(files) == 1 else (
        f"{len(files)} files ({', '.join(n for n, _ in files[:3])}{'…' if len(files) > 3 else ''})")
    return ImportJob.objects.create(project=project, user=user if getattr(user, "pk", None) else None,
                                    source_name=str(shown)[:1000], path=str(path), size=size, fmt=fmt)


def import_job_enqueue(*, job: ImportJob) -> None:
    """Small uploads import right away (the page shows the report at once); big ones go to Celery."""
    if job.size <= settings.DEEPREPO_IMPORT_INLINE_BYTES:
        transaction.on_commit(lambda: import_job_run(job_id=job.pk))
        return
    transaction.on_commit(functools.partial(import_job_send, job_id=job.pk))


def import_job_send(*, job_id: int) -> bool:
    """Send run_import for a queued job; False if the broker could not be reached.

    The upload is already stored and committed, so a broker that is away (Redis restarting) must
    not fail the request: the job stays queued with a note, and beat sends it again later."""
    from workers.tasks import run_import

    try:
        run_import.delay(job_id)
    except Exception as exc:  # noqa: BLE001 - kombu/redis raise many types; all mean "not queued"
        log.warning("could not queue import %s: %s", job_id, exc)
        ImportJob.objects.filter(pk=job_id, status=ImportStatus.QUEUED).update(error=QUEUE_AWAY)
        return False
    ImportJob.objects.filter(pk=job_id, status=ImportStatus.QUEUED).update(sent_at=timezone.now(), error="")
    return True


def import_jobs_resend() -> int:
    """Beat: send run_import again for jobs that lost their message or their worker.

    Still queued a stale window after the last send: the message never reached the broker, or died
    with it (Redis restarted empty). Running with a heartbeat that stopped a stale window ago: the
    worker died mid-import. A job that merely waits behind others gets a duplicate, which is
    harmless: import_job_run claims a job once."""
    stale = _stale_before(timezone.now())
    waiting = ImportJob.objects.filter(Q(status=ImportStatus.QUEUED, sent_at__lt=stale) | _worker_lost(stale))
    waiting = waiting.order_by("pk")
    sent = 0
    for job_id in waiting.values_list("pk", flat=True)[:RESEND_BATCH]:
        if not import_job_send(job_id=job_id):
            break  # the broker is still away; the next pass tries again
        sent += 1
    return sent


def _stale_before(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.DEEPREPO_IMPORT_STALE_SECONDS)


def _worker_lost(stale: datetime) -> Q:
    """Running, but its heartbeat stopped a stale window ago: the process importing it died."""
    return Q(status=ImportStatus.RUNNING, heartbeat_at__lt=stale)


@contextmanager
def _heartbeat(job_id: int) -> Iterator[None]:
    """Renew the job's heartbeat from a thread while the import runs, whatever the import is doing
    (a long batch, a slow parse): only a dead process stops it."""
    stop = threading.Event()
    every = max(0.5, settings.DEEPREPO_IMPORT_STALE_SECONDS / 4)

    def beat() -> None:
        try:
            while not stop.wait(every):
                ImportJob.objects.filter(pk=job_id, status=ImportStatus.RUNNING).update(heartbeat_at=timezone.now())
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=beat, name=f"deeprepo-import-heartbeat-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=every + 30)


def import_job_run(*, job_id: int) -> ImportJob | None:
    """Run one queued import, or take over one whose worker died (its heartbeat stopped).

    A duplicate (or late) call changes nothing: the claim is conditional. Taking over imports the
    file again from the start; what the dead worker stored is found and not doubled.
    """
    now = timezone.now()
    claimable = Q(status=ImportStatus.QUEUED) | _worker_lost(_stale_before(now))
    if not ImportJob.objects.filter(claimable, pk=job_id).update(
            status=ImportStatus.RUNNING, started_at=now, heartbeat_at=now, error=""):
        return None
    job = ImportJob.objects.select_related("project").get(pk=job_id)

    def progress(rows: int) -> None:
        ImportJob.objects.filter(pk=job_id).update(progress=rows)

    path = Path(job.path)
    root = path.parent if path.is_file() else path
    try:
        with _heartbeat(job_id):
            report = import_path(project=job.project, path=path, fmt=job.fmt or None, progress=progress,
                                 display_root=root, display_name=job.source_name)
    except Exception as exc:  # a bug, not bad input: say so on the page instead of a silent 'running'
        ImportJob.objects.filter(pk=job_id).update(
            status=ImportStatus.FAILED, error=_exc_line(exc), finished_at=timezone.now())
        raise
    status = ImportStatus.DONE if report.imported_anything else ImportStatus.FAILED
    error = "" if report.imported_anything else (
        report.problems[0]["message"] if report.problems else "nothing to import")
    ImportJob.objects.filter(pk=job_id).update(
        status=status, report=report.as_dict(), progress=report.rows, error=error[:2000],
        finished_at=timezone.now())
    job.refresh_from_db()
    return job
