"""The retention sweep, run by beat: in bounded batches, clear old rollouts' bodies (turn content
and reasoning, tool-call arguments and outputs, their blobs once nothing else uses them) and delete
old OTLP items. A rollout keeps its row, reward, tokens, sizes and labels; its pages say the bodies
went. OTLP items whose trace became a rollout go after DEEPREPO_OTLP_ITEM_DAYS even without a policy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.retention.models import RetentionMark, RetentionPolicy
from deeprepo_web.runs.ingest.blobs import blobs_collect
from deeprepo_web.runs.ingest.pg import dumps
from deeprepo_web.runs.models import BlobRef, RolloutTurns, Run
from deeprepo_web.runs.turndoc import bodies_cleared

log = logging.getLogger(__name__)
BATCH = 500


class RetentionError(ValueError):
    pass


@dataclass
class Swept:
    bodies: int = 0
    otlp_items: int = 0
    blobs: int = 0


def policy_set(*, project: Project, keep_days: int | None) -> RetentionPolicy:
    if keep_days is not None and not 1 <= keep_days <= 36_500:
        raise RetentionError("keep_days: a number of days from 1, or empty to keep forever")
    policy, _ = RetentionPolicy.objects.update_or_create(project=project, defaults={"keep_days": keep_days})
    return policy


def _run_bodies_clear(run: Run, cutoff: datetime, batch: int) -> tuple[int, list[str]]:
    """Clear one batch of the run's old rollouts; returns (rollouts cleared, blob shas it may free)."""
    mark, _ = RetentionMark.objects.get_or_create(run=run)
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT id, created_at FROM runs_rollout WHERE run_id = %s AND id > %s ORDER BY id LIMIT %s",
                    [run.pk, mark.rollout_id, batch])
        ids = []
        for rid, created in cur.fetchall():
            if created >= cutoff:
                break  # later ones are younger: the next sweep goes on from here
            ids.append(rid)
        if not ids:
            return 0, []
        shas: set[str] = set()
        cleared: list[tuple[int, str]] = []
        for rid, doc in RolloutTurns.objects.select_for_update().filter(rollout_id__in=ids).values_list("rollout_id", "doc"):
            doc, found = bodies_cleared(doc)
            shas |= found
            cleared.append((rid, dumps(doc)))
        if cleared:
            cur.execute("UPDATE runs_rolloutturns d SET doc = x.doc FROM unnest(%s::bigint[], %s::text[]) "
                        "AS x(rid, doc) WHERE d.rollout_id = x.rid", [[c[0] for c in cleared], [c[1] for c in cleared]])
        # The error lines kept on the rollout row (and their signatures) are the outputs' last lines: they
        # go with them.
        cur.execute("UPDATE runs_rollout SET tool_errors = (SELECT jsonb_agg(jsonb_build_array(e->0, e->1, '', '') "
                    "ORDER BY n) FROM jsonb_array_elements(tool_errors) WITH ORDINALITY AS x(e, n)) "
                    "WHERE id = ANY(%s) AND tool_errors <> '[]'", [ids])
        RetentionMark.objects.filter(pk=run.pk).update(rollout_id=ids[-1])
        if shas:  # the run's reference to a blob goes when none of its bodies still points at it
            cur.execute("SELECT t.content_blob FROM runs_turn t JOIN runs_rollout r ON r.id = t.rollout_id "
                        "WHERE r.run_id = %s AND t.content_blob = ANY(%s) UNION SELECT c.output_blob FROM "
                        "runs_toolcall c JOIN runs_rollout r ON r.id = c.rollout_id WHERE r.run_id = %s "
                        "AND c.output_blob = ANY(%s)", [run.pk, list(shas), run.pk, list(shas)])
            BlobRef.objects.filter(run=run, sha__in=shas - {sha for (sha,) in cur.fetchall()}).delete()
    return len(ids), sorted(shas)



def _otlp_delete(run_ids: list[int] | None, cutoff: datetime, batch: int) -> int:
    """Old items of these runs; with run_ids None, old items (any run) whose trace became a rollout."""
    where, params = ("i.run_id = ANY(%s)", [run_ids]) if run_ids is not None else (
        "EXISTS (SELECT 1 FROM runs_rollout r WHERE r.run_id = i.run_id AND r.uid = 'otlp-' || i.trace_id)", [])
    with connection.cursor() as cur:
        cur.execute(f"DELETE FROM otlp_otlpitem WHERE id IN (SELECT i.id FROM otlp_otlpitem i WHERE {where} "
                    "AND i.received_at < %s LIMIT %s)", [*params, cutoff, batch])
        return int(cur.rowcount)


def retention_sweep(*, now: datetime | None = None, batch: int = BATCH, budget: int = 20) -> Swept:
    """One beat's work: at most `budget` batches of `batch` rows; the next beat goes on."""
    now = now or timezone.now()
    swept = Swept()
    for policy in RetentionPolicy.objects.filter(keep_days__isnull=False).select_related("project"):
        cutoff = now - timedelta(days=policy.keep_days or 0)
        runs = list(Run.objects.filter(project=policy.project))
        bodies = items = 0
        for run in runs:
            while budget > 0:
                budget -= 1
                n, shas = _run_bodies_clear(run, cutoff, batch)
                bodies += n
                swept.blobs += blobs_collect(shas)
                if n < batch:
                    break
        while budget > 0 and runs:
            budget -= 1
            n = _otlp_delete([r.pk for r in runs], cutoff, batch)
            items += n
            if n < batch:
                break
        RetentionPolicy.objects.filter(pk=policy.pk).update(
            bodies_cleared=policy.bodies_cleared + bodies, otlp_items_deleted=policy.otlp_items_deleted + items,
            last_sweep_at=now)
        swept.bodies += bodies
        swept.otlp_items += items
    item_cutoff = now - timedelta(days=settings.DEEPREPO_OTLP_ITEM_DAYS)
    while budget > 0:
        budget -= 1
        n = _otlp_delete(None, item_cutoff, batch)
        swept.otlp_items += n
        if n < batch:
            break
    return swept
