"""Writes of labels and marks. Callers have checked the editor role (accounts.access)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

from django.db import IntegrityError, connection, transaction

from deeprepo_web.accounts.models import Project
from deeprepo_web.labels.models import Label, Mark, MarkStatus
from deeprepo_web.runs.models import Rollout
from deeprepo_web.runs.turns import turn_exists
from deeprepo_web.text import clean_text

COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
BATCH = 2000


class LabelError(Exception):
    """One line for the user, naming the field that was wrong."""


def label_create(*, project: Project, name: str, colour: str = "#6b7280", description: str = "") -> Label:
    name = clean_text(name).strip()
    if not name or len(name) > 100:
        raise LabelError("name: give the label a name of 1 to 100 characters")
    if not COLOUR.match(colour):
        raise LabelError(f"colour: {colour[:20]!r} is not a colour like #d9480f")
    try:
        with transaction.atomic():
            return Label.objects.create(project=project, name=name, colour=colour.lower(),
                                        description=clean_text(description)[:5000])
    except IntegrityError:
        raise LabelError(f"name: the project already has a label named {name!r}") from None


def mark_create(*, label: Label, rollout: Rollout, user: Any, turn_index: int | None = None, note: str = "",
                status: str = MarkStatus.CONFIRMED, source: str = "person") -> Mark:
    """Put `label` on the rollout (or one of its turns); the same mark twice updates its note."""
    if label.project_id != rollout.run.project_id:
        raise LabelError("label: not a label of this rollout's project")
    if turn_index is not None and not turn_exists(rollout, turn_index):
        raise LabelError(f"turn: #{turn_index} is not a turn of this rollout")
    mark, _ = Mark.objects.update_or_create(
        label=label, rollout=rollout, turn_index=turn_index,
        defaults={"run_id": rollout.run_id, "note": clean_text(note)[:5000], "status": status, "source": source,
                  "created_by": user if getattr(user, "is_authenticated", False) else None},
    )
    return mark


def mark_delete(*, mark: Mark) -> None:
    mark.delete()


def mark_review(*, mark: Mark, confirm: bool, user: Any) -> Mark:
    """A person's word on a judge's verdict: confirmed, or rejected (kept, so it is not proposed again)."""
    mark.status = MarkStatus.CONFIRMED if confirm else MarkStatus.REJECTED
    mark.created_by = user
    mark.save(update_fields=["status", "created_by"])
    return mark


def marks_bulk_create(*, label: Label, rollout_ids: Iterable[int], user: Any, note: str = "") -> int:
    """Label every rollout of an iterator (a search's results) in batches; marks already there stay."""
    user_id = user.pk if getattr(user, "is_authenticated", False) else None
    added = 0
    ids = iter(rollout_ids)
    with transaction.atomic(), connection.cursor() as cur:
        while batch := list(islice(ids, BATCH)):
            # Only rollouts of the label's project: the ids came from a scoped search, this makes sure.
            cur.execute(
                "INSERT INTO labels_mark (label_id, rollout_id, run_id, turn_index, note, status, created_by_id, "
                "source, created_at) SELECT %s, r.id, r.run_id, NULL, %s, 'confirmed', %s, 'person', now() FROM runs_rollout r "
                "JOIN runs_run run ON run.id = r.run_id WHERE r.id = ANY(%s) AND run.project_id = %s "
                "ON CONFLICT DO NOTHING",
                [label.pk, clean_text(note), user_id, batch, label.project_id],
            )
            added += cur.rowcount
    return added


def marks_follow_turns(*, rollout_ids: list[int], turn_moves: Callable[[int], dict[int, int]]) -> None:
    """Turn marks of rebuilt rollouts move with their turn (`turn_moves(rollout) -> {old index: new}`).
    Marks of one label meeting on one turn are kept once (the first); a mark whose turn went with
    nothing in its place keeps its index."""
    with connection.cursor() as cur:
        cur.execute("SELECT id, rollout_id, label_id, turn_index FROM labels_mark "
                    "WHERE rollout_id = ANY(%s) AND turn_index IS NOT NULL ORDER BY id", [rollout_ids])
        marks = cur.fetchall()
        maps = {rid: turn_moves(rid) for rid in {m[1] for m in marks}}
        target = {m[0]: maps[m[1]].get(m[3], m[3]) for m in marks}
        moving = [m for m in marks if target[m[0]] != m[3]]
        if not moving:
            return
        taken = {(m[1], m[2], m[3]) for m in marks if target[m[0]] == m[3]}
        # Out of the way first (-id is free): moving a mark onto an index another mark is leaving would
        # break the unique (label, rollout, turn_index) for a moment.
        cur.execute("UPDATE labels_mark SET turn_index = -id WHERE id = ANY(%s)", [[m[0] for m in moving]])
        for mark_id, rid, label_id, _index in moving:
            key = (rid, label_id, target[mark_id])
            if key in taken:
                cur.execute("DELETE FROM labels_mark WHERE id = %s", [mark_id])
            else:
                taken.add(key)
                cur.execute("UPDATE labels_mark SET turn_index = %s WHERE id = %s", [target[mark_id], mark_id])
