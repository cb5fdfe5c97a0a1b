"""Reads for the rollouts table, GRPO groups, trajectories and examples. Every list is paged without COUNT(*)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, F, Q

from deeprepo_web.analysis.grpo import DeadRule, GroupStats, group_stats
from deeprepo_web.front.paging import KeysetPage, SortKey, id_key, keyset_page, list_after, offset_page
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import Example, Rollout, Run, ToolCall, Turn, total_tokens
from deeprepo_web.runs.selectors import reward_bounds
from deeprepo_web.runs.turns import turns_after


def _keys(field: str, kind: str, nullable: bool = False) -> dict[str, list[SortKey]]:
    """The ascending and descending orders of a column, NULLs last either way, ties by id."""
    return {
        field: [SortKey(field, kind, nullable=nullable), id_key()],
        f"-{field}": [SortKey(field, kind, desc=True, nullable=nullable), id_key(desc=True)],
    }


ROLLOUT_ORDERS: dict[str, list[SortKey]] = {
    "id": [id_key()],
    "-id": [id_key(desc=True)],
    **_keys("reward", "float", nullable=True),
    **_keys("num_turns", "int"),
    **_keys("total_tokens", "int"),  # input + output, NULLs as 0 (annotated by rollout_page)
    **_keys("output_tokens", "int", nullable=True),
    # Unstepped rollouts (an eval's) come first going up, last going down.
    "step": [SortKey("step", "int", nullable=True, nulls_last=False), id_key()],
    "-step": [SortKey("step", "int", desc=True, nullable=True), id_key(desc=True)],
}
# The table's names for two columns; the API takes both.
ROLLOUT_ORDERS["turns"], ROLLOUT_ORDERS["-turns"] = ROLLOUT_ORDERS["num_turns"], ROLLOUT_ORDERS["-num_turns"]
ROLLOUT_ORDERS["tokens"], ROLLOUT_ORDERS["-tokens"] = ROLLOUT_ORDERS["total_tokens"], ROLLOUT_ORDERS["-total_tokens"]


@dataclass
class RolloutFilter:
    """What the rollouts table can be narrowed by; None / "" means no constraint."""

    step: int | None = None
    example: str = ""  # substring of the example key (case-insensitive)
    reward_min: float | None = None
    reward_max: float | None = None
    stop: str = ""
    has_error: bool | None = None
    truncated: bool | None = None
    label: str = ""  # a label's name: rollouts that carry it (not rejected)

    def q(self) -> Q:
        q = Q()
        if self.step is not None:
            q &= Q(step=self.step)
        if self.example:
            q &= Q(example__key__icontains=self.example)
        if self.reward_min is not None:
            q &= Q(reward__gte=self.reward_min)
        if self.reward_max is not None:
            q &= Q(reward__lte=self.reward_max)
        if self.stop:
            q &= Q(stop_condition=self.stop)
        if self.has_error is not None:
            q &= ~Q(error="") if self.has_error else Q(error="")
        if self.truncated is not None:
            q &= Q(is_truncated=self.truncated)
        if self.label:
            from deeprepo_web.labels.selectors import marked_with

            q &= marked_with(self.label)
        return q


def rollout_page(
    *,
    run: Run,
    cursor: str = "",
    per_page: int = 50,
    order: str = "id",
    filters: dict[str, Any] | RolloutFilter | None = None,
    page: int | None = None,
) -> KeysetPage[Rollout]:
    """One page of a run's rollouts after (or before) `cursor`, no COUNT and no OFFSET. `page` is the
    API's old numbered paging, kept for clients that still send it (an OFFSET, capped by the API)."""
    qs = Rollout.objects.filter(run=run)
    if isinstance(filters, RolloutFilter):
        qs = qs.filter(filters.q())
    elif filters:
        qs = qs.filter(**filters)
    if order not in ROLLOUT_ORDERS:
        order = "id"
    keys = ROLLOUT_ORDERS[order]
    if keys[0].field == "total_tokens":
        qs = qs.annotate(total_tokens=total_tokens())
    qs = qs.select_related("example").defer("final_answer", "example__prompt", "example__oracle", "example__info")
    if page is not None and page > 1 and not cursor:
        return offset_page(qs, keys=keys, order=order, offset=(page - 1) * per_page, per_page=per_page)
    return keyset_page(qs, keys=keys, order=order, cursor=cursor, per_page=per_page)


def rollout_steps(*, run: Run, limit: int = 100_000) -> list[int | None]:
    """Distinct steps that have rollouts, ascending (None first), by a skip scan over the
    (run, step, example) index: cost grows with the number of steps, not of rollouts."""
    with read_cursor() as cur:
        cur.execute(
            """
            WITH RECURSIVE s(step) AS (
                (SELECT step FROM runs_rollout WHERE run_id = %(run)s AND step IS NOT NULL ORDER BY step LIMIT 1)
                UNION ALL
                SELECT (SELECT r.step FROM runs_rollout r WHERE r.run_id = %(run)s AND r.step > s.step
                        ORDER BY r.step LIMIT 1)
                FROM s WHERE s.step IS NOT NULL
            )
            SELECT step FROM s WHERE step IS NOT NULL LIMIT %(limit)s
            """,
            {"run": run.pk, "limit": limit},
        )
        steps: list[int | None] = [row[0] for row in cur.fetchall()]
        cur.execute("SELECT EXISTS (SELECT 1 FROM runs_rollout WHERE run_id = %s AND step IS NULL)", [run.pk])
        if cur.fetchone()[0]:
            steps.insert(0, None)
    return steps


@dataclass
class StepNav:
    """Where the Groups tab's step input can go: the existing steps around one, found by index seeks."""

    prev: int | None  # the step before (None with has_prev: the unstepped rollouts)
    has_prev: bool
    next: int | None
    first: int | None  # the run's lowest and highest steps, None when every rollout is unstepped
    last: int | None
    unstepped: bool  # some rollouts have no step (an eval's)


def step_nav(*, run: Run, step: int | None) -> StepNav:
    """The existing steps before and after `step` (None: the unstepped rollouts), the first and the
    last: five LIMIT 1 index reads on (run, step), one round trip, however many steps the run has."""
    with read_cursor() as cur:
        cur.execute(
            """
            SELECT (SELECT step FROM runs_rollout WHERE run_id = %(run)s AND step < %(step)s ORDER BY step DESC LIMIT 1),
                   (SELECT step FROM runs_rollout WHERE run_id = %(run)s AND step > %(step)s ORDER BY step LIMIT 1),
                   (SELECT step FROM runs_rollout WHERE run_id = %(run)s AND step IS NOT NULL ORDER BY step LIMIT 1),
                   (SELECT step FROM runs_rollout WHERE run_id = %(run)s AND step IS NOT NULL
                    ORDER BY step DESC LIMIT 1),
                   EXISTS (SELECT 1 FROM runs_rollout WHERE run_id = %(run)s AND step IS NULL)
            """,
            {"run": run.pk, "step": step},
        )
        before, after, first, last, unstepped = cur.fetchone()
    if step is None:  # the unstepped rollouts come before every step
        return StepNav(prev=None, has_prev=False, next=first, first=first, last=last, unstepped=unstepped)
    has_prev = before is not None or unstepped
    return StepNav(prev=before, has_prev=has_prev, next=after, first=first, last=last, unstepped=unstepped)


def rollout_stop_conditions(*, run: Run, sample: int = 5000) -> list[str]:
    """Stop conditions seen among the run's latest `sample` rollouts (a hint for the filter, bounded)."""
    # One scan of the run's rollouts: reading stop_condition there spares a join back by id.
    with read_cursor() as cur:
        cur.execute(
            "SELECT DISTINCT s FROM (SELECT stop_condition AS s FROM runs_rollout WHERE run_id = %s "
            "ORDER BY id DESC LIMIT %s) latest WHERE s <> '' ORDER BY s LIMIT 50",
            [run.pk, sample],
        )
        return [row[0] for row in cur.fetchall()]


def _step_q(step: int | None) -> Q:
    return Q(step__isnull=True) if step is None else Q(step=step)


@dataclass
class Group:
    example: Example
    rollouts: list[Rollout]
    stats: GroupStats | None  # None when no rollout of the group has a reward


@dataclass
class StepGroups:
    groups: list[Group]
    paging: KeysetPage[int]  # the page's example ids and the cursors around them
    n_groups: int  # in the whole step, not just this page
    n_dead: int
    n_all_fail: int
    n_all_pass: int
    n_rollouts: int
    capped: bool  # the step had more rollouts than the summary reads

    @property
    def has_next(self) -> bool:
        return bool(self.paging.next_cursor)

    @property
    def n_other(self) -> int:
        return self.n_dead - self.n_all_fail - self.n_all_pass

    @property
    def dead_frac(self) -> float | None:
        return self.n_dead / self.n_groups if self.n_groups else None


GROUP_SUMMARY_CAP = 50_000


def groups_for_step(*, run: Run, step: int | None, cursor: str = "", per_page: int = 20) -> StepGroups:
    """The rollouts of one step grouped per example (a page of examples) with GRPO stats, plus a
    summary over every group of the step. A step is one batch, so reading its rewards is bounded."""
    where = Q(run=run) & _step_q(step)
    rewards = list(
        Rollout.objects.filter(where).order_by("example_id", "id").values_list("example_id", "reward")[
            : GROUP_SUMMARY_CAP + 1
        ]
    )
    capped = len(rewards) > GROUP_SUMMARY_CAP
    rewards = rewards[:GROUP_SUMMARY_CAP]
    rule = DeadRule.for_rewards(*reward_bounds(run=run))  # the run page's GRPO health reads the same
    all_stats = group_stats(({"example_key": e, "reward": r} for e, r in rewards), rule=rule)
    # Single-rollout groups have no variance by construction; they are not "dead" (as in explorer/health.py).
    comparable = [g for g in all_stats if g.size > 1]
    example_ids: list[int] = []
    for e, _ in rewards:
        if not example_ids or example_ids[-1] != e:
            example_ids.append(e)
    # Examples in id order; a cursor is the last (or first) example id of a page.
    paging = list_after(example_ids, key=lambda e: e, cursor=cursor, order="groups", kind="int", per_page=per_page)
    page_ids = paging.rows
    rows = list(
        Rollout.objects.filter(where, example_id__in=page_ids)
        .defer("final_answer", "metrics")
        .order_by("example_id", F("sample_index").asc(nulls_last=True), "id")
    )
    examples = Example.objects.defer("prompt", "oracle", "info").in_bulk(page_ids)
    groups = []
    for eid in page_ids:
        members = [r for r in rows if r.example_id == eid]
        # Recomputed over the page's rows (same rewards) so each advantage lines up with its rollout.
        stats = group_stats(({"example_key": eid, "reward": r.reward} for r in members), rule=rule)
        for r in members:
            r.group_advantage = None  # type: ignore[attr-defined]
        if stats:
            for position, adv in zip(stats[0].indices, stats[0].advantages, strict=True):
                members[position].group_advantage = adv  # type: ignore[attr-defined]
        groups.append(Group(example=examples[eid], rollouts=members, stats=stats[0] if stats else None))
    return StepGroups(
        groups=groups,
        paging=paging,
        n_groups=len(comparable),
        n_dead=sum(1 for g in comparable if g.dead is not None),
        n_all_fail=sum(1 for g in comparable if g.dead == "all_fail"),
        n_all_pass=sum(1 for g in comparable if g.dead == "all_pass"),
        n_rollouts=len(rewards),
        capped=capped,
    )


def group_siblings(*, rollout: Rollout, limit: int = 256) -> list[dict[str, Any]]:
    """The other rollouts of this rollout's group (same run, step, example), in sample order."""
    rows = (
        Rollout.objects.filter(Q(run_id=rollout.run_id, example_id=rollout.example_id) & _step_q(rollout.step))
        .order_by(F("sample_index").asc(nulls_last=True), "id")
        .values("id", "sample_index", "reward", "is_truncated")[:limit]
    )
    return [dict(row) for row in rows]


MAX_GROUP_ROWS = 5000


def page_group_advantages(*, run: Run, rollouts: list[Rollout]) -> dict[int, float]:
    """The advantage the Groups tab shows for each rollout of a list page that logged none, by id.

    One query reads the groups (run, step, example) of those rollouts, bounded by MAX_GROUP_ROWS.
    """
    wanted = [r for r in rollouts if r.advantage is None and r.step is not None]
    if not wanted:
        return {}
    rows = list(
        Rollout.objects.filter(run=run, step__in={r.step for r in wanted}, example_id__in={r.example_id for r in wanted})
        .order_by("step", "example_id", F("sample_index").asc(nulls_last=True), "id")
        .values("id", "step", "example_id", "reward")[:MAX_GROUP_ROWS]
    )
    groups: dict[tuple[Any, Any], list[Any]] = {}
    for row in rows:
        groups.setdefault((row["step"], row["example_id"]), []).append(row)
    out: dict[int, float] = {}
    for members in groups.values():
        stats = group_stats({"example_key": "", "reward": m["reward"]} for m in members)
        if stats:
            for position, adv in zip(stats[0].indices, stats[0].advantages, strict=True):
                out[members[position]["id"]] = adv
    return out


def group_advantage(*, rollout: Rollout, siblings: list[dict[str, Any]]) -> float | None:
    """The advantage the Groups tab shows for `rollout` (from its group's rewards), for one that logged none."""
    stats = group_stats({"example_key": "", "reward": s["reward"]} for s in siblings)
    if not stats:
        return None
    ids = [siblings[i]["id"] for i in stats[0].indices]
    return stats[0].advantages[ids.index(rollout.pk)] if rollout.pk in ids else None


@dataclass
class TurnView:
    turn: Turn
    calls: list[ToolCallView]


@dataclass
class ToolCallView:
    call: ToolCall
    sub_calls: list[ToolCallView]


TURNS_PAGE = 50
TURNS_MAX_PAGE = 1000


def turn_views_page(*, rollout: Rollout, start: int = 0, limit: int = TURNS_PAGE) -> tuple[list[TurnView], bool]:
    """Turns [start, start+limit) with their tool-call trees (nested here), and whether more turns follow."""
    limit = max(1, min(limit, TURNS_MAX_PAGE))
    turns, calls, has_next = turns_after(rollout=rollout, start=start, limit=limit)
    views = {c.pk: ToolCallView(call=c, sub_calls=[]) for c in calls}
    roots: dict[int, list[ToolCallView]] = {}
    for c in calls:
        view = views[c.pk]
        parent = views.get(c.parent_id) if c.parent_id else None
        if parent is not None:
            parent.sub_calls.append(view)
        else:
            roots.setdefault(c.turn_id, []).append(view)
    return [TurnView(turn=t, calls=roots.get(t.pk, [])) for t in turns], has_next


# An example's rollouts: newest run first, then by step (unstepped first) and sample.
EXAMPLE_ROLLOUT_KEYS = [
    SortKey("run__created_at", "datetime", desc=True), SortKey("run_id", "int"),
    SortKey("step", "int", nullable=True, nulls_last=False), SortKey("sample_index", "int", nullable=True), id_key(),
]


def example_rollouts_page(*, example: Example, cursor: str = "", per_page: int = 50) -> KeysetPage[Rollout]:
    qs = (
        Rollout.objects.filter(example=example)
        .select_related("run")
        .defer("final_answer", "metrics", "run__config", "run__summary", "run__notes")
    )
    return keyset_page(qs, keys=EXAMPLE_ROLLOUT_KEYS, order="example", cursor=cursor, per_page=per_page)


@dataclass
class ExampleRunRewards:
    run: Run
    cells: list[dict[str, Any]]  # {step, mean, n}, ascending step
    mean: float | None
    n: int


def example_rewards(*, example: Example, max_cells: int = 5000) -> list[ExampleRunRewards]:
    """Mean reward of the example per run and step (one aggregate query, bounded by runs x steps)."""
    cells = list(
        Rollout.objects.filter(example=example)
        .values("run_id", "step")
        .annotate(mean=Avg("reward"), n=Count("id"))
        .order_by("run_id", F("step").asc(nulls_first=True))[:max_cells]
    )
    runs = Run.objects.in_bulk({c["run_id"] for c in cells})
    out: dict[int, ExampleRunRewards] = {}
    for c in cells:
        entry = out.setdefault(c["run_id"], ExampleRunRewards(run=runs[c["run_id"]], cells=[], mean=None, n=0))
        entry.cells.append({"step": c["step"], "mean": c["mean"], "n": c["n"]})
    for entry in out.values():
        scored = [(c["mean"], c["n"]) for c in entry.cells if c["mean"] is not None]
        entry.n = sum(c["n"] for c in entry.cells)
        total = sum(n for _, n in scored)
        entry.mean = sum(m * n for m, n in scored) / total if total else None
    return sorted(out.values(), key=lambda e: e.run.created_at, reverse=True)
