"""A rollout's turns and tool calls, as pages, exports, the judge and share links read them.

They are stored as one document per rollout (runs_rolloutturns, runs/turndoc.py) and read here
through the views runs_turn and runs_toolcall (the Turn and ToolCall models), always by rollout:
Postgres then expands that rollout's document only. The trajectory page's read (`turns_after`) takes
the document itself and slices it here, one parse instead of the views' two.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Prefetch

from deeprepo_web.runs.models import Rollout, RolloutTurns, ToolCall, Turn
from deeprepo_web.runs.turndoc import call_fields, turn_fields


def turn_count(rollout: Rollout) -> int:
    """Every turn of the rollout, the user's and the tools' too (Rollout.num_turns counts the model's)."""
    return Turn.objects.filter(rollout=rollout).count()


def turn_exists(rollout: Rollout, index: int) -> bool:
    return Turn.objects.filter(rollout=rollout, index=index).exists()


def turns_page(*, rollout: Rollout, start: int = 0, limit: int = 50) -> list[Turn]:
    """Turns [start, start+limit) in order, each with its tool calls prefetched (`turn.tool_calls.all()`)."""
    return list(
        Turn.objects.filter(rollout=rollout, index__gte=start, index__lt=start + limit)
        .order_by("index")
        .prefetch_related(Prefetch("tool_calls", queryset=ToolCall.objects.filter(rollout=rollout)))
    )


def calls_in_order(turn: Turn) -> list[ToolCall]:
    """A prefetched turn's calls: the turn's own calls first, each parent's sub-calls after them."""
    return sorted(turn.tool_calls.all(), key=lambda c: (c.parent_id or 0, c.index))


def turns_after(*, rollout: Rollout, start: int, limit: int) -> tuple[list[Turn], list[ToolCall], bool]:
    """Up to `limit` turns from index `start`, every tool call of those turns (nested ones too) in
    (turn, index, id) order, and whether more turns follow. The trajectory page's read: the document is
    read once and sliced here (through the two views Postgres parsed all of it twice for each page:
    a page of a 2,000-turn rollout with 4,000 calls took ~65 ms that way)."""
    doc: list[dict[str, Any]] = RolloutTurns.objects.filter(rollout=rollout).values_list("doc", flat=True).first() or []
    after = [e for e in doc if e["i"] >= start]
    page = after[:limit]
    turns = [Turn(rollout=rollout, **turn_fields(e)) for e in page]
    calls = [ToolCall(rollout=rollout, **call_fields(c, e)) for e in page for c in e.get("k", ())]
    calls.sort(key=lambda c: (c.turn_id, c.index, c.pk))
    return turns, calls, len(after) > limit


def turns_and_top_calls(rollout_ids: list[int]) -> tuple[dict[int, list[Turn]], dict[int, list[ToolCall]]]:
    """The rollouts' turns in order ({rollout id: turns}) and each turn's own tool calls, sub-calls left
    out ({turn id: calls}): a whole trajectory as text (the judge's prompt, a chat dataset row)."""
    turns: dict[int, list[Turn]] = defaultdict(list)
    for t in Turn.objects.filter(rollout_id__in=rollout_ids).order_by("rollout_id", "index"):
        turns[t.rollout_id].append(t)
    calls: dict[int, list[ToolCall]] = defaultdict(list)
    for c in ToolCall.objects.filter(rollout_id__in=rollout_ids, parent__isnull=True).order_by("turn_id", "index"):
        calls[c.turn_id].append(c)
    return turns, calls


def body_blob(*, rollout: Rollout, kind: str, object_id: int) -> str:
    """The blob store key of a turn's content ("turn") or a tool call's output ("call") of this rollout
    that was too big for its row; "" when there is none."""
    if kind == "turn":
        return Turn.objects.filter(pk=object_id, rollout=rollout).values_list("content_blob", flat=True).first() or ""
    if kind == "call":
        return ToolCall.objects.filter(pk=object_id, rollout=rollout).values_list("output_blob", flat=True).first() or ""
    return ""
