"""One import's state: a Run per parser ref (found again by (source, external_id) on a re-import),
every batch its own transaction (a bad batch is reported and the others stay), and SWE-bench rewards
attached to rollouts the project already has."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from deeprepo_client.formats import patch_touches_tests
from deeprepo_client.records import MediaEvent, MetricsEvent, RewardsEvent, RolloutsEvent, RunEvent
from deeprepo_web.accounts.models import Project
from deeprepo_web.importers.media import media_store
from deeprepo_web.importers.report import ImportReport, RunReport, exc_line
from deeprepo_web.importers.writers import REFUSED, Writers, batch_transaction, rollouts_save
from deeprepo_web.runs import services as runs
from deeprepo_web.runs.ingest.badkeys import metrics_ingest_good, refusal_line
from deeprepo_web.runs.ingest.metrics import series_cache_clear
from deeprepo_web.runs.ingest.pg import dumps
from deeprepo_web.runs.ingest.rollouts import example_key_hash
from deeprepo_web.runs.models import Run, RunKind, RunStatus
from deeprepo_web.storage import StorageError
from deeprepo_web.text import clean_deep


def _ts(value: Any) -> datetime | None:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    return None


class Importer:
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
        self.writers: Writers | None = None
        self.orphans: dict[str, str] = {}  # ref -> its parent's ref, not announced yet when the run was made

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
        parent = self._parent(ref, record)
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
            self._refresh(ref, run, record, fields, parent)
        rep = self.by_ref[ref]
        rep.public_id, rep.created, rep.kind = run.public_id, created, run.kind
        self.runs[ref] = run
        self.rep_by_pk[run.pk] = rep
        self.report.runs.append(rep)
        return run

    def _parent(self, ref: str, record: dict[str, Any]) -> Run | None:
        """The run's parent: another run of this import, or one the project already has (an eval folder
        imported after its train run, an MLflow child run after its parent). A parent of this import
        announced later than its child is linked at the end (finish)."""
        parent_ref = record.get("parent_ref")
        if parent_ref in self.records and parent_ref != ref:
            return self.run_for(parent_ref)
        external = record.get("parent_external_id")
        if external:
            found = Run.objects.filter(project=self.project, source=str(record.get("source") or "import")[:32],
                                       external_id=str(external)[:200]).first()
            if found is not None:
                return found
        if parent_ref:
            self.orphans[ref] = str(parent_ref)
        return None

    def _refresh(self, ref: str, run: Run, record: dict[str, Any], fields: dict[str, Any], parent: Run | None) -> None:
        """The same file (or another copy of it) again: refresh what the file says about the run.

        A partial file (cut short, or still written) knows nothing of how an ended run ended: over a
        run a complete file finished, it keeps the run's status and lets its summary fill gaps only.
        """
        changes = {k: v for k, v in fields.items() if k not in ("notes", "tags") and v not in ("", None, {})}
        ended = run.status in (RunStatus.FINISHED, RunStatus.FAILED)
        if record.get("partial") and ended:
            if changes.pop("status", run.status) != run.status:
                self.report.problem(self.display(self.report.path), None,
                                    f"run {self.by_ref[ref].name!r} kept its status {run.status!r}: this file is "
                                    "cut short, and an earlier complete import said how the run ended")
            if changes.get("summary"):
                changes["summary"] = {**changes["summary"], **run.summary}
        elif changes.get("summary"):
            changes["summary"] = {**run.summary, **changes["summary"]}
        if parent is not None:
            changes["parent"] = parent
        runs.run_update(run=run, **changes)

    def finish(self, had_problems: bool) -> None:
        """Runs the file announced but sent no rows for: made only when nothing went wrong."""
        for ref in self.records:
            if ref in self.runs or ref in self.matched or had_problems:
                continue
            self.run_for(ref)
        for ref, parent_ref in self.orphans.items():
            if ref in self.runs and parent_ref in self.records:
                runs.run_update(run=self.runs[ref], parent=self.run_for(parent_ref))
        # The batches committed without waiting for the disk (batch_transaction). This write
        # commits the ordinary way, and Postgres flushes its log in order: once it returns, every
        # batch before it is on disk too, so nothing is reported that a crash could still take.
        if self.runs:
            Run.objects.filter(pk__in=[run.pk for run in self.runs.values()]).update(updated_at=timezone.now())

    # ------------------------------------------------------------ rows

    def _batch_problem(self, ref: str, what: str, exc: Exception) -> None:
        self.report.problem(self.display(self.report.path), None,
                            f"run {self.by_ref[ref].name!r}: {what} not stored: {exc_line(exc)}")

    def metrics(self, ev: MetricsEvent) -> None:
        run = self.run_for(ev.ref)
        try:
            with batch_transaction():
                stored, refused = metrics_ingest_good(run=run, points=ev.points)  # type: ignore[arg-type]
                self.by_ref[ev.ref].points += stored
            if refused:
                self.report.problem(self.display(self.report.path), None,
                                    f"run {self.by_ref[ev.ref].name!r}: {refusal_line(refused)}")
        except REFUSED as exc:
            series_cache_clear()  # the failed batch's series rows were rolled back with it
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
            self._stored(ev.ref, rollouts_save(run, records))  # type: ignore[arg-type]
        else:
            self.writers.submit(ev.ref, run, records)  # type: ignore[arg-type]
            for ref, outcome in self.writers.done():
                self._stored(ref, outcome)

    def media(self, ev: MediaEvent) -> None:
        run = self.run_for(ev.ref)
        try:
            added, problems = media_store(run, ev.media)
        except (*REFUSED, StorageError) as exc:
            self._batch_problem(ev.ref, f"{len(ev.media)} media files", exc)
            return
        self.by_ref[ev.ref].media += added
        for message in problems:
            self.report.problem(self.display(self.report.path), None,
                                f"run {self.by_ref[ev.ref].name!r}: media not stored: {message}")

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
        hashes = {example_key_hash(str(k)): str(k) for k in ev.by_example}
        if not hashes:
            return
        rows = _latest_rollouts(self.project.pk, list(hashes), own_source, own_external)
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
            updates.append((rollout_id, result.get("reward"), dumps(clean_deep(new_comps)),
                            dumps(clean_deep(new_metrics))))
            per_run[run_id] = per_run.get(run_id, 0) + 1
            matched.add(key)
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(
                "UPDATE runs_rollout AS ro SET reward = u.rw, reward_components = u.rc::jsonb, metrics = u.m::jsonb "
                "FROM unnest(%s::bigint[], %s::float8[], %s::text[], %s::text[]) AS u(id, rw, rc, m) "
                "WHERE ro.id = u.id",
                [[u[0] for u in updates], [u[1] for u in updates], [u[2] for u in updates], [u[3] for u in updates]],
            )
            runs.runs_rewritten(run_ids=per_run)  # same rollout ids: caches keyed on them would not notice
        self._count_rewards(per_run)

    def _count_rewards(self, per_run: dict[int, int]) -> None:
        """Rewards attached per run, on the run's own line of the report (made for runs of other files)."""
        for run_id, n in per_run.items():
            rep = self.rep_by_pk.get(run_id)
            if rep is None:
                target = Run.objects.get(pk=run_id)
                rep = RunReport(ref=f"rewards:{target.public_id}", name=target.name, public_id=target.public_id,
                                kind=target.kind)
                self.rep_by_pk[run_id] = rep
                self.report.runs.append(rep)
            rep.rewards_attached += n


def _latest_rollouts(project_id: int, hashes: list[str], own_source: str,
                     own_external: str) -> list[tuple[Any, ...]]:
    """Rollouts of these examples (by key hash) in each example's most recent run of the project,
    leaving out the importing file's own run."""
    with connection.cursor() as cur:
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
            [project_id, hashes, own_source, own_external, project_id],
        )
        return cur.fetchall()
