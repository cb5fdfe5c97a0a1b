"""Rollouts rebuilt in place: a record whose (run, uid) is stored already updates that rollout's row
and replaces its turns and tool calls, so the rollout keeps its id (its URL, its marks, its place in
search). Used where a rollout grows after it was first stored (OTLP traces whose spans come late).

A turn is known by its role and content, and the old and new turn lists are aligned (difflib): a
turn found again maps to wherever it now is; a turn rewritten (e.g. its output arrived late) maps to
the turn that took its place. `runs.signals.rollouts_rebuilt` hands that map to the features that keep
rows about turns (labels move their marks, search drops the old turns' documents), in this transaction.
The run's updated_at moves with them (`runs.services.runs_rewritten`): the newest rollout id does not.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from deeprepo_web.runs.ingest.blobs import blob_refs_write
from deeprepo_web.runs.ingest.images import images_offload
from deeprepo_web.runs.ingest.rollouts import (
    _examples_upsert,
    _rollout_row,
    _turns_write,
    example_key_hash,
    rollout_uid,
    rollouts_ingest,
)
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.services import runs_rewritten
from deeprepo_web.runs.signals import rollouts_rebuilt

# _rollout_row's columns after uid, example_id (run_id and created_at are not rewritten).
_UPDATED = ("step", "sample_index", "reward", "reward_components", "advantage", "num_turns", "input_tokens",
            "output_tokens", "cost", "is_truncated", "stop_condition", "error", "duration", "final_answer",
            "metrics", "tools", "tool_errors", "error_sig")
_JSONB = {"reward_components", "metrics", "tools", "tool_errors"}


def _turn_print(role: str, content: str, blob: str) -> str:
    return hashlib.sha256(f"{role}\0{blob or content}".encode("utf-8", "replace")).hexdigest()


def _prints(cur: Any, rollout_ids: list[int]) -> dict[int, list[str]]:
    """{rollout id: the print of each turn, by index}."""
    cur.execute("SELECT rollout_id, index, role, content, content_blob FROM runs_turn "
                "WHERE rollout_id = ANY(%s) ORDER BY rollout_id, index", [rollout_ids])
    out: dict[int, list[str]] = {}
    for rid, _index, role, content, blob in cur.fetchall():
        out.setdefault(rid, []).append(_turn_print(role, content, blob))
    return out


def _index_map(before: list[str], after: list[str]) -> dict[int, int]:
    """Old turn index -> new one: turns found again map to where they are now; a stretch of turns
    rewritten maps onto the stretch that replaced it, position by position (its last turn when the
    new stretch is shorter); a turn removed with nothing in its place is left out."""
    out: dict[int, int] = {}
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "delete":
            continue
        for i in range(i1, i2):
            out[i] = j1 + min(i - i1, j2 - j1 - 1)
    return out


def _rows_update(cur: Any, rows: list[tuple[Any, ...]], ids: list[int]) -> None:
    sets = ", ".join(f"{c} = %s::jsonb" if c in _JSONB else f"{c} = %s" for c in ("example_id", *_UPDATED))
    for rid, row in zip(ids, rows, strict=True):
        cur.execute(f"UPDATE runs_rollout SET {sets} WHERE id = %s", [*row[1:2 + len(_UPDATED)], rid])


def rollouts_replace(*, run: Run, rollouts: list[dict[str, Any]]) -> int:
    """Store rollouts, rebuilding in place those whose uid the run has already; returns how many
    were written (new or rebuilt). Records must have distinct uids."""
    if not rollouts:
        return 0
    rollouts = images_offload(run=run, rollouts=rollouts)  # as rollouts_ingest does for new ones
    uids = [rollout_uid(r) for r in rollouts]
    with transaction.atomic(), connection.cursor() as cur, connection.wrap_database_errors:
        cur.execute("SELECT uid, id FROM runs_rollout WHERE run_id = %s AND uid = ANY(%s) FOR UPDATE",
                    [run.pk, uids])
        stored: dict[str, int] = dict(cur.fetchall())
        kept = [(stored[u], r) for r, u in zip(rollouts, uids, strict=True) if u in stored]
        new = [r for r, u in zip(rollouts, uids, strict=True) if u not in stored]
        if kept:
            ids = [rid for rid, _ in kept]
            records = [r for _, r in kept]
            example_ids = _examples_upsert(cur, run, records)
            now = timezone.now()
            rows = [_rollout_row(r, uid, example_ids[example_key_hash(r["example_key"])], now, run)
                    for (_, r), uid in zip(kept, [rollout_uid(r) for r in records], strict=True)]
            _rows_update(cur, rows, ids)
            before = _prints(cur, ids)
            cur.execute("DELETE FROM runs_rolloutturns WHERE rollout_id = ANY(%s)", [ids])
            refs: set[str] = set()
            _turns_write(cur, kept, refs)
            blob_refs_write(cur, run, refs)
            after = _prints(cur, ids)
            rollouts_rebuilt.send(sender=Run, rollout_ids=ids,
                                  turn_moves=lambda rid: _index_map(before.get(rid, []), after.get(rid, [])))
        written = len(kept) + rollouts_ingest(run=run, rollouts=new)
        if kept:  # last, so the run's row is locked for the shortest time
            runs_rewritten(run_ids=[run.pk])
        return written
