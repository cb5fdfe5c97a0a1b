"""Reads for the runs explorer: the filtered, sorted table, its facets, and reward sparklines."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.front.paging import KeysetPage, SortKey, id_key, keyset_page
from deeprepo_web.labels.selectors import label_names, runs_marked_with, with_label_counts
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.ingest.metrics import ROLLUP_WIDTHS
from deeprepo_web.runs.models import MetricSeries, Run
from deeprepo_web.runs.selectors import finite_or_none

# Metric keys that stand for "the reward" of a run, in order of preference.
REWARD_KEYS = ("reward", "reward/mean", "train/reward", "rewards/mean", "eval/reward", "critic/score/mean")  # last: verl
# sort name → (column, the kind of its values, nullable)
RUN_SORTS = {
    "created": ("created_at", "datetime", False), "name": ("name", "str", False), "status": ("status", "str", False),
    "kind": ("kind", "str", False), "model": ("model", "str", False), "environment": ("environment", "str", False),
    "started": ("started_at", "datetime", True),
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
    label: str = ""  # runs with at least one rollout carrying this label (labels app)
    sort: str = "-created"
    group: str = ""  # what was typed: a config key, dotted or not, with or without "config."
    group_paths: tuple[str, ...] = ()  # the existing dotted keys it names (grouping.group_paths)


def _config_path(group: str) -> list[str] | None:
    if not group.startswith("config.") or len(group) <= len("config.") or len(group) > 200:
        return None
    return group[len("config."):].split(".")


def run_table(*, project: Project, query: RunQuery, cursor: str = "", per_page: int = 50) -> KeysetPage[Run]:
    """One page of the project's runs under `query` after (or before) `cursor`: no COUNT, no OFFSET.
    The order is (group value, the sort column, id), NULLs last; a cursor holds those values."""
    from django.db.models import OuterRef, Q, Subquery
    from django.db.models.fields.json import KT
    from django.db.models.functions import Coalesce

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
    if query.label:
        qs = qs.filter(runs_marked_with(project=project, name=query.label))
    keys: list[SortKey] = []
    paths = [p.split(".") for p in query.group_paths]
    if not paths and (path := _config_path(query.group)) is not None:
        paths = [path]
    if paths:
        values = [KT("config__" + "__".join(path)) for path in paths]
        qs = qs.annotate(group_value=values[0] if len(values) == 1 else Coalesce(*values))
        keys.append(SortKey("group_value", "str", nullable=True))
    desc = query.sort.startswith("-")
    name = query.sort.lstrip("-")
    if name.startswith("metric:") and len(name) > len("metric:"):
        key = name[len("metric:"):]
        qs = qs.annotate(sort_value=Subquery(
            MetricSeries.objects.filter(run=OuterRef("pk"), key=key).values("last_value")[:1]
        ))
        keys.append(SortKey("sort_value", "float", desc=desc, nullable=True))
    else:
        column, kind, nullable = RUN_SORTS.get(name, RUN_SORTS["created"])
        keys.append(SortKey(column, kind, desc=desc, nullable=nullable))
    keys.append(id_key(desc=True))
    # With a label chosen, the labels column counts that label alone; else every label, most first.
    qs = with_label_counts(qs, name=query.label)
    order = f"runs {query.sort} {'|'.join('.'.join(p) for p in paths)}"
    return keyset_page(qs, keys=keys, order=order, cursor=cursor, per_page=per_page)


def run_facets(*, project: Project) -> dict[str, list[str]]:
    """Distinct values for the explorer's filter menus (one small query each, bounded)."""
    base = Run.objects.filter(project=project)
    out: dict[str, list[str]] = {}
    for column in ("model", "environment"):
        out[column] = list(
            base.exclude(**{column: ""}).order_by(column).values_list(column, flat=True).distinct()[:200]
        )
    with read_cursor() as cur:
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
    out["label"] = label_names(project=project)[:200]
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
    with read_cursor() as cur:
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
        out[run_id] = RunReward(key=key, last=finite_or_none(last_value), points=_thin(points, SPARK_POINTS))
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

