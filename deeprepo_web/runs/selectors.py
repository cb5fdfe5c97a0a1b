"""Reads for runs. Pages cost what they show: every query here is bounded by its page or bucket count."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Avg, Count, F, Q, QuerySet
from django.db.models.functions import Coalesce

from deeprepo_web.accounts.models import Project
from deeprepo_web.analysis.grpo import GroupStats, group_stats
from deeprepo_web.runs.models import Example, MetricSeries, Rollout, Run, ToolCall, Turn
from deeprepo_web.runs.services import ROLLUP_WIDTHS

MAX_BUCKETS = 2000


def run_list(*, project: Project) -> QuerySet[Run]:
    return Run.objects.filter(project=project).order_by("-created_at")


def series_keys(*, run: Run) -> list[str]:
    return list(MetricSeries.objects.filter(run=run).order_by("key").values_list("key", flat=True))


@dataclass
class Series:
    key: str
    steps: list[int] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)
    last: list[float | None] = field(default_factory=list)
    min: list[float | None] = field(default_factory=list)
    max: list[float | None] = field(default_factory=list)
    count: int = 0
    resolution: int = 1  # steps per bucket actually used

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "count": self.count,
            "resolution": self.resolution,
            "step": self.steps,
            "time": self.times,
            "value": self.last,
            "min": self.min,
            "max": self.max,
        }


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def series_downsampled(*, run: Run, key: str, buckets: int = 1000) -> Series | None:
    """Per-bucket min / max / last for at most `buckets` buckets (spikes survive in min/max).

    Reads raw points when there are few; otherwise the finest precomputed rollup level with at
    most 8x the wanted buckets, merged down. Cost is bounded by the bucket count, not the points.
    """
    buckets = max(1, min(buckets, MAX_BUCKETS))
    series = MetricSeries.objects.filter(run=run, key=key).first()
    if series is None:
        return None
    out = Series(key=key, count=series.count)
    if series.count == 0 or series.first_step is None or series.last_step is None:
        return out
    span = series.last_step - series.first_step + 1
    width = max(1, math.ceil(span / buckets))
    origin = series.first_step
    with connection.cursor() as cur:
        if series.count <= buckets:
            cur.execute(
                "SELECT step, value, value, value, time FROM runs_metric WHERE series_id = %s ORDER BY step",
                [series.pk],
            )
            rows = cur.fetchall()
            width = 1
        else:
            level = 0
            for i, w in enumerate(ROLLUP_WIDTHS):
                if span / w <= 8 * buckets:
                    level = i
                    break
            else:
                level = len(ROLLUP_WIDTHS) - 1
            # A whole number of rollup buckets per output bucket, so every bucket is exact.
            w = ROLLUP_WIDTHS[level]
            width = math.ceil(width / w) * w
            origin = series.first_step - series.first_step % w
            # Merge the rollup buckets down to the wanted width in Postgres: half the rows cross the wire.
            cur.execute(
                "SELECT max(last_step), min(min_value), max(max_value), "
                "(array_agg(last_value ORDER BY last_step DESC))[1], (array_agg(last_time ORDER BY last_step DESC))[1] "
                "FROM runs_metricrollup WHERE series_id = %s AND level = %s "
                "GROUP BY (last_step - %s) / %s ORDER BY 1",
                [series.pk, level, origin, width],
            )
            rows = cur.fetchall()
    out.resolution = width
    current: int | None = None
    for step, lo, hi, last, time_ in rows:
        b = (step - origin) // width
        lo, hi, last = _finite(lo), _finite(hi), _finite(last)
        if b != current:
            current = b
            out.steps.append(step)
            out.times.append(time_)
            out.last.append(last)
            out.min.append(lo)
            out.max.append(hi)
            continue
        out.steps[-1], out.times[-1], out.last[-1] = step, time_, last
        if lo is not None:
            out.min[-1] = lo if out.min[-1] is None else min(out.min[-1], lo)
        if hi is not None:
            out.max[-1] = hi if out.max[-1] is None else max(out.max[-1], hi)
    return out


# ---------------------------------------------------------------- rollouts, groups, trajectories

ROLLOUT_ORDERS: dict[str, tuple[Any, ...]] = {
    "id": (F("id").asc(),),
    "-id": (F("id").desc(),),
    "reward": (F("reward").asc(nulls_last=True),),
    "-reward": (F("reward").desc(nulls_last=True),),
    "turns": (F("num_turns").asc(),),
    "-turns": (F("num_turns").desc(),),
    "tokens": (F("total_tokens").asc(nulls_last=True),),
    "-tokens": (F("total_tokens").desc(nulls_last=True),),
    "step": (F("step").asc(nulls_first=True),),
    "-step": (F("step").desc(nulls_last=True),),
}
# Older callers passed field names.
ROLLOUT_ORDERS["num_turns"], ROLLOUT_ORDERS["-num_turns"] = ROLLOUT_ORDERS["turns"], ROLLOUT_ORDERS["-turns"]
ROLLOUT_ORDERS["output_tokens"] = (F("output_tokens").asc(nulls_last=True),)
ROLLOUT_ORDERS["-output_tokens"] = (F("output_tokens").desc(nulls_last=True),)


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
        return q


def rollout_page(
    *,
    run: Run,
    page: int = 1,
    per_page: int = 50,
    order: str = "id",
    filters: dict[str, Any] | RolloutFilter | None = None,
) -> tuple[list[Rollout], bool]:
    """One page of a run's rollouts and whether there is a next one (no COUNT over the table)."""
    qs = Rollout.objects.filter(run=run)
    if isinstance(filters, RolloutFilter):
        qs = qs.filter(filters.q())
    elif filters:
        qs = qs.filter(**filters)
    ordering = ROLLOUT_ORDERS.get(order, ROLLOUT_ORDERS["id"])
    if order in ("tokens", "-tokens"):
        qs = qs.annotate(total_tokens=Coalesce("input_tokens", 0) + Coalesce("output_tokens", 0))
    tie = F("id").desc() if order.startswith("-") else F("id").asc()
    qs = qs.select_related("example").defer("final_answer", "example__prompt", "example__oracle", "example__info")
    qs = qs.order_by(*ordering, tie)
    start = (max(page, 1) - 1) * per_page
    rows = list(qs[start : start + per_page + 1])
    return rows[:per_page], len(rows) > per_page


def rollout_steps(*, run: Run, limit: int = 100_000) -> list[int | None]:
    """Distinct steps that have rollouts, ascending (None first), by a skip scan over the
    (run, step, example) index: cost grows with the number of steps, not of rollouts."""
    with connection.cursor() as cur:
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


def rollout_stop_conditions(*, run: Run, sample: int = 5000) -> list[str]:
    """Stop conditions seen among the run's latest `sample` rollouts (a hint for the filter, bounded)."""
    # One scan of the run's rollouts: reading stop_condition there spares a join back by id.
    with connection.cursor() as cur:
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
    has_next: bool
    n_groups: int  # in the whole step, not just this page
    n_dead: int
    n_all_fail: int
    n_all_pass: int
    n_rollouts: int
    capped: bool  # the step had more rollouts than the summary reads

    @property
    def n_other(self) -> int:
        return self.n_dead - self.n_all_fail - self.n_all_pass

    @property
    def dead_frac(self) -> float | None:
        return self.n_dead / self.n_groups if self.n_groups else None


GROUP_SUMMARY_CAP = 50_000


def groups_for_step(*, run: Run, step: int | None, page: int = 1, per_page: int = 20) -> StepGroups:
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
    all_stats = group_stats({"example_key": e, "reward": r} for e, r in rewards)
    # Single-rollout groups have no variance by construction; they are not "dead" (see step_aggregates).
    comparable = [g for g in all_stats if g.size > 1]
    example_ids: list[int] = []
    for e, _ in rewards:
        if not example_ids or example_ids[-1] != e:
            example_ids.append(e)
    start = (max(page, 1) - 1) * per_page
    page_ids = example_ids[start : start + per_page]
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
        stats = group_stats({"example_key": eid, "reward": r.reward} for r in members)
        for r in members:
            r.group_advantage = None  # type: ignore[attr-defined]
        if stats:
            for position, adv in zip(stats[0].indices, stats[0].advantages, strict=True):
                members[position].group_advantage = adv  # type: ignore[attr-defined]
        groups.append(Group(example=examples[eid], rollouts=members, stats=stats[0] if stats else None))
    return StepGroups(
        groups=groups,
        has_next=len(example_ids) > start + per_page,
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


def turns_page(*, rollout: Rollout, start: int = 0, limit: int = 50) -> list[Turn]:
    """Turns with their tool calls prefetched (flat), for the API's export."""
    return list(
        Turn.objects.filter(rollout=rollout, index__gte=start, index__lt=start + limit)
        .order_by("index")
        .prefetch_related("tool_calls")
    )


def turn_views_page(*, rollout: Rollout, start: int = 0, limit: int = TURNS_PAGE) -> tuple[list[TurnView], bool]:
    """Turns [start, start+limit) with their tool-call trees, and whether more turns follow.

    Two queries whatever the page: the turns (one extra row tells if there is a next page) and
    every tool call of those turns, nested in Python.
    """
    limit = max(1, min(limit, TURNS_MAX_PAGE))
    turns = list(Turn.objects.filter(rollout=rollout, index__gte=max(start, 0)).order_by("index")[: limit + 1])
    has_next = len(turns) > limit
    turns = turns[:limit]
    calls = list(ToolCall.objects.filter(turn_id__in=[t.pk for t in turns]).order_by("turn_id", "index", "id"))
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


def example_rollouts_page(*, example: Example, page: int = 1, per_page: int = 50) -> tuple[list[Rollout], bool]:
    qs = (
        Rollout.objects.filter(example=example)
        .select_related("run")
        .defer("final_answer", "metrics", "run__config", "run__summary", "run__notes")
        .order_by("-run__created_at", "run_id", F("step").asc(nulls_first=True), "sample_index", "id")
    )
    start = (max(page, 1) - 1) * per_page
    rows = list(qs[start : start + per_page + 1])
    return rows[:per_page], len(rows) > per_page


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


OUTLIER_SCAN = 20_000


def turn_outlier_ids(run: Run, *, step: int | None = None) -> set[int]:
    """Ids of the run's over-long rollouts (turns above Q3 + 1.5 IQR of the run, or of one step).

    Relative to the run, so computed at read time; reads two integer columns of at most
    OUTLIER_SCAN rollouts. For the rollouts table's badge.
    """
    from deeprepo_web.analysis.behaviour import turn_outliers

    qs = Rollout.objects.filter(run=run)
    if step is not None:
        qs = qs.filter(step=step)
    rows = list(qs.order_by("id").values_list("id", "num_turns")[:OUTLIER_SCAN])
    return {rows[i][0] for i in turn_outliers([t for _, t in rows])}


# ---------------------------------------------------------------- runs explorer

# Metric keys that stand for "the reward" of a run, in order of preference.
REWARD_KEYS = ("reward", "reward/mean", "train/reward", "rewards/mean", "eval/reward")
RUN_SORTS = {
    "created": "created_at", "name": "name", "status": "status", "kind": "kind", "model": "model",
    "environment": "environment", "started": "started_at",
}


@dataclass
class RunQuery:
    """The explorer's filters, all optional; built from a query string by the view."""

    status: str = ""
    kind: str = ""
    model: str = ""
    environment: str = ""
    tag: str = ""
    q: str = ""
    sort: str = "-created"
    group: str = ""  # "config.<dotted key>"


def _config_path(group: str) -> list[str] | None:
    if not group.startswith("config.") or len(group) <= len("config.") or len(group) > 200:
        return None
    return group[len("config."):].split(".")


def run_table(*, project: Project, query: RunQuery, page: int = 1, per_page: int = 50) -> tuple[list[Run], bool]:
    """One page of the project's runs under `query`, and whether a next page exists (no COUNT)."""
    from django.db.models import F, OuterRef, Q, Subquery
    from django.db.models.fields.json import KT

    qs = Run.objects.filter(project=project)
    if query.status:
        qs = qs.filter(status=query.status)
    if query.kind:
        qs = qs.filter(kind=query.kind)
    if query.model:
        qs = qs.filter(model=query.model)
    if query.environment:
        qs = qs.filter(environment=query.environment)
    if query.tag:
        qs = qs.filter(tags__contains=[query.tag])
    if query.q:
        qs = qs.filter(Q(name__icontains=query.q) | Q(notes__icontains=query.q))
    order: list[Any] = []
    path = _config_path(query.group)
    if path is not None:
        qs = qs.annotate(group_value=KT("config__" + "__".join(path)))
        order.append(F("group_value").asc(nulls_last=True))
    desc = query.sort.startswith("-")
    name = query.sort.lstrip("-")
    if name.startswith("metric:") and len(name) > len("metric:"):
        key = name[len("metric:"):]
        qs = qs.annotate(sort_value=Subquery(
            MetricSeries.objects.filter(run=OuterRef("pk"), key=key).values("last_value")[:1]
        ))
        order.append(F("sort_value").desc(nulls_last=True) if desc else F("sort_value").asc(nulls_last=True))
    else:
        column = RUN_SORTS.get(name, "created_at")
        order.append(F(column).desc(nulls_last=True) if desc else F(column).asc(nulls_last=True))
    order.append("-id")
    start = (max(page, 1) - 1) * per_page
    rows = list(qs.order_by(*order)[start : start + per_page + 1])
    return rows[:per_page], len(rows) > per_page


def run_facets(*, project: Project) -> dict[str, list[str]]:
    """Distinct values for the explorer's filter menus (one small query each, bounded)."""
    base = Run.objects.filter(project=project)
    out: dict[str, list[str]] = {}
    for column in ("model", "environment"):
        out[column] = list(
            base.exclude(**{column: ""}).order_by(column).values_list(column, flat=True).distinct()[:200]
        )
    with connection.cursor() as cur:
        cur.execute(
            "SELECT DISTINCT t FROM runs_run, unnest(tags) AS t WHERE project_id = %s ORDER BY t LIMIT 200",
            [project.pk],
        )
        out["tag"] = [row[0] for row in cur.fetchall()]
        # Metric keys to sort by: the keys of the latest runs are representative and cheap to read.
        cur.execute(
            "SELECT DISTINCT s.key FROM runs_metricseries s WHERE s.run_id IN "
            "(SELECT id FROM runs_run WHERE project_id = %s ORDER BY created_at DESC LIMIT 50) "
            "ORDER BY s.key LIMIT 300",
            [project.pk],
        )
        out["metric"] = [row[0] for row in cur.fetchall()]
    return out


@dataclass
class RunReward:
    key: str
    last: float | None
    points: list[float]  # ≤ SPARK_POINTS values for the sparkline, in step order


SPARK_POINTS = 60


def run_rewards(*, runs: list[Run]) -> dict[int, RunReward]:
    """Last reward and a ≤60-point sparkline per run, for a whole page in at most three queries."""
    if not runs:
        return {}
    ids = [r.pk for r in runs]
    series = list(
        MetricSeries.objects.filter(run_id__in=ids, key__in=REWARD_KEYS).values_list(
            "id", "run_id", "key", "count", "first_step", "last_step", "last_value"
        )
    )
    rank = {k: i for i, k in enumerate(REWARD_KEYS)}
    chosen: dict[int, tuple[Any, ...]] = {}
    for row in series:
        current = chosen.get(row[1])
        if current is None or rank[row[2]] < rank[current[2]]:
            chosen[row[1]] = row
    raw_ids: list[int] = []
    level_of: dict[int, int] = {}
    for sid, _run, _key, count, first, last, _lv in chosen.values():
        if count <= 4 * SPARK_POINTS or first is None or last is None:
            raw_ids.append(sid)
            continue
        span = last - first + 1
        level = len(ROLLUP_WIDTHS) - 1
        for i, w in enumerate(ROLLUP_WIDTHS):
            if span / w <= 4 * SPARK_POINTS:
                level = i
                break
        level_of[sid] = level
    values: dict[int, list[tuple[int, float | None]]] = {sid: [] for sid, *_ in chosen.values()}
    with connection.cursor() as cur:
        if raw_ids:
            cur.execute(
                "SELECT series_id, step, value FROM runs_metric WHERE series_id = ANY(%s) ORDER BY series_id, step",
                [raw_ids],
            )
            for sid, step, value in cur.fetchall():
                values[sid].append((step, value))
        # One query per distinct level (usually one): `series_id = ANY(...) AND level = L` walks the
        # rollup primary key, where a join on (series, level) pairs made Postgres scan.
        for level in sorted(set(level_of.values())):
            cur.execute(
                "SELECT series_id, last_step, last_value FROM runs_metricrollup "
                "WHERE series_id = ANY(%s) AND level = %s ORDER BY series_id, bucket",
                [[sid for sid, lv in level_of.items() if lv == level], level],
            )
            for sid, step, value in cur.fetchall():
                values[sid].append((step, value))
    out: dict[int, RunReward] = {}
    for sid, run_id, key, _count, _first, _last, last_value in chosen.values():
        points = [v for _, v in values[sid] if v is not None and math.isfinite(v)]
        out[run_id] = RunReward(key=key, last=_finite(last_value), points=_thin(points, SPARK_POINTS))
    return out


def _thin(points: list[float], n: int) -> list[float]:
    """At most n points: the mean of each of n equal slices (a sparkline shows the trend, not spikes)."""
    if len(points) <= n:
        return points
    out = []
    for i in range(n):
        a = i * len(points) // n
        b = max(a + 1, (i + 1) * len(points) // n)
        chunk = points[a:b]
        out.append(sum(chunk) / len(chunk))
    return out


# ---------------------------------------------------------------- GRPO health

HEALTH_MAX_STEPS = 5000
_TOL = 1e-9

# One pass over a run's rollouts through the (run, step, example) index: groups per (step, example),
# then per step. Bounded by the run's rollouts; the step count caps the output.
_HEALTH_SQL = """
WITH base AS (
    SELECT step, example_id, reward, num_turns, input_tokens, output_tokens, cost
    FROM runs_rollout WHERE run_id = %(run)s AND step IS NOT NULL
), bounds AS (
    SELECT min(reward) AS lo, max(reward) AS hi FROM base
), g AS (
    SELECT step, example_id, count(reward) AS n, min(reward) AS mn, max(reward) AS mx
    FROM base GROUP BY step, example_id
), gs AS (
    SELECT g.step,
           count(*) FILTER (WHERE g.n > 0) AS groups,
           count(*) FILTER (WHERE g.n > 1 AND g.mx - g.mn <= %(tol)s) AS dead,
           count(*) FILTER (WHERE g.n > 1 AND g.mx - g.mn <= %(tol)s
                            AND (g.mx <= %(tol)s OR g.mx <= b.lo + %(tol)s)) AS all_fail,
           count(*) FILTER (WHERE g.n > 1 AND g.mx - g.mn <= %(tol)s
                            AND NOT (g.mx <= %(tol)s OR g.mx <= b.lo + %(tol)s) AND g.mn >= b.hi - %(tol)s)
                            AS all_pass
    FROM g CROSS JOIN bounds b GROUP BY g.step
), st AS (
    SELECT step, count(*) AS rollouts, avg(reward) AS mean, stddev_pop(reward) AS std,
           percentile_cont(ARRAY[0.1, 0.25, 0.5, 0.75, 0.9]) WITHIN GROUP (ORDER BY reward) AS q,
           avg(num_turns) AS turns, avg(input_tokens) AS tin, avg(output_tokens) AS tout,
           sum(cost) AS cost
    FROM base GROUP BY step
)
SELECT st.step, st.rollouts, gs.groups, gs.dead, gs.all_fail, gs.all_pass, st.mean, st.std, st.q,
       st.turns, st.tin, st.tout, st.cost
FROM st JOIN gs ON gs.step = st.step
ORDER BY st.step DESC LIMIT %(limit)s
"""


@dataclass
class Health:
    step: list[int] = field(default_factory=list)
    rollouts: list[int] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)
    frac_dead: list[float | None] = field(default_factory=list)
    frac_all_fail: list[float | None] = field(default_factory=list)
    frac_all_pass: list[float | None] = field(default_factory=list)
    mean: list[float | None] = field(default_factory=list)
    std: list[float | None] = field(default_factory=list)
    p10: list[float | None] = field(default_factory=list)
    p25: list[float | None] = field(default_factory=list)
    p50: list[float | None] = field(default_factory=list)
    p75: list[float | None] = field(default_factory=list)
    p90: list[float | None] = field(default_factory=list)
    turns: list[float | None] = field(default_factory=list)
    input_tokens: list[float | None] = field(default_factory=list)
    output_tokens: list[float | None] = field(default_factory=list)
    cost: list[float | None] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _f(value: Any) -> float | None:
    return None if value is None else _finite(float(value))


def grpo_health(*, run: Run, max_steps: int = HEALTH_MAX_STEPS) -> Health:
    """Per training step: dead-group fractions (all-fail / all-pass), reward quantiles, turns, tokens, cost.

    A group is the rollouts of one example at one step; it is dead (no GRPO signal) when it has
    two or more rewards and they are all equal. All-fail: the common reward is ≤ 0 or the run's
    lowest reward; all-pass: it is the run's highest reward. The latest `max_steps` steps are kept.
    """
    with connection.cursor() as cur:
        cur.execute(_HEALTH_SQL, {"run": run.pk, "tol": _TOL, "limit": max_steps})
        rows = cur.fetchall()
    out = Health()
    for step, n, groups, dead, fail, pas, mean, std, q, turns, tin, tout, cost in reversed(rows):
        out.step.append(step)
        out.rollouts.append(n)
        out.groups.append(groups)
        out.frac_dead.append(dead / groups if groups else None)
        out.frac_all_fail.append(fail / groups if groups else None)
        out.frac_all_pass.append(pas / groups if groups else None)
        out.mean.append(_f(mean))
        out.std.append(_f(std))
        qs = list(q) if q is not None else [None] * 5
        for name, value in zip(("p10", "p25", "p50", "p75", "p90"), qs, strict=True):
            getattr(out, name).append(_f(value))
        out.turns.append(_f(turns))
        out.input_tokens.append(_f(tin))
        out.output_tokens.append(_f(tout))
        out.cost.append(_f(cost))
    return out
