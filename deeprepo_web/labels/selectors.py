"""Reads of labels: the marks of rollouts on a page, and label counts per run."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.db.models.expressions import RawSQL

from deeprepo_web.accounts.models import Project
from deeprepo_web.labels.models import Label, Mark, MarkStatus
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.runs.models import Run


def marks_for_rollouts(rollout_ids: list[int]) -> dict[int, list[Mark]]:
    out: dict[int, list[Mark]] = {}
    if not rollout_ids:
        return out
    marks = Mark.objects.filter(rollout_id__in=rollout_ids).exclude(status=MarkStatus.REJECTED).select_related(
        "label", "created_by").order_by("label__name", "turn_index")
    for m in marks:
        out.setdefault(m.rollout_id, []).append(m)
    return out


def labels_on_rollouts(rollout_ids: list[int]) -> list[tuple[Label, set[int]]]:
    """Each label that marks some of these rollouts (rejected proposals aside), by name, with the
    rollouts it marks. The ids go as one array parameter: a comparison may hold 100,000 of them."""
    if not rollout_ids:
        return []
    marked: dict[int, set[int]] = {}
    with read_cursor() as cur:
        cur.execute("SELECT label_id, rollout_id FROM labels_mark WHERE rollout_id = ANY(%s) AND status <> %s",
                    [rollout_ids, MarkStatus.REJECTED.value])
        for label_id, rollout_id in cur.fetchall():
            marked.setdefault(label_id, set()).add(rollout_id)
    return [(label, marked[label.pk]) for label in Label.objects.filter(pk__in=marked).order_by("name")]


def label_list(*, project: Project) -> list[Label]:
    """The project's labels with how many rollouts each marks (proposed ones apart)."""
    return list(Label.objects.filter(project=project).annotate(
        confirmed=Count("marks__rollout", filter=Q(marks__status=MarkStatus.CONFIRMED), distinct=True),
        proposed=Count("marks__rollout", filter=Q(marks__status=MarkStatus.PROPOSED), distinct=True),
    ).order_by("name"))


def label_names(*, project: Project) -> list[str]:
    return list(Label.objects.filter(project=project).order_by("name").values_list("name", flat=True))


def marked_with(name: str) -> Q:
    """A rollout filter: it carries the label `name` (not rejected). For Rollout querysets."""
    marks = Mark.objects.filter(rollout=OuterRef("pk"), label__name=name).exclude(status=MarkStatus.REJECTED)
    return Q(Exists(marks))


def marks_by_turn(*, rollout_id: int) -> dict[int, list[Mark]]:
    out: dict[int, list[Mark]] = {}
    marks = Mark.objects.filter(rollout_id=rollout_id, turn_index__isnull=False).exclude(
        status=MarkStatus.REJECTED).select_related("label").order_by("label__name")
    for m in marks:
        out.setdefault(m.turn_index, []).append(m)  # type: ignore[arg-type]
    return out


@dataclass(frozen=True)
class RunLabelCount:
    name: str
    colour: str
    rollouts: int  # rollouts of the run marked with the label (not rejected; proposed ones count)


# Per run: [[name, colour, marked rollouts], ...], most first. A correlated subquery, so the explorer's
# page of runs carries its label counts in its own query (the page has a fixed query budget); Postgres
# evaluates it after ORDER BY/LIMIT, for the rows shown only, through the marks' (run, label) index.
_COUNTS_SQL = """
    SELECT coalesce(json_agg(json_build_array(l.name, l.colour, c.n) ORDER BY c.n DESC, l.name), '[]'::json)
    FROM (SELECT m.label_id, count(DISTINCT m.rollout_id) AS n FROM labels_mark m
          WHERE m.run_id = runs_run.id AND m.status <> %s {only} GROUP BY m.label_id) c
    JOIN labels_label l ON l.id = c.label_id
"""


def with_label_counts(runs: QuerySet[Run], *, name: str = "") -> QuerySet[Run]:
    """Runs annotated with `label_counts` (read them with run_label_counts); with `name`, that label only."""
    if name:
        sql = _COUNTS_SQL.format(
            only="AND m.label_id IN (SELECT id FROM labels_label WHERE project_id = runs_run.project_id AND name = %s)")
        return runs.annotate(label_counts=RawSQL(sql, (MarkStatus.REJECTED, name)))
    return runs.annotate(label_counts=RawSQL(_COUNTS_SQL.format(only=""), (MarkStatus.REJECTED,)))


def run_label_counts(run: Run) -> list[RunLabelCount]:
    """The labels of a run annotated by with_label_counts, with how many of its rollouts carry each."""
    return [RunLabelCount(name=n, colour=c, rollouts=k) for n, c, k in getattr(run, "label_counts", None) or []]


def runs_marked_with(*, project: Project, name: str) -> Q:
    """A run filter: at least one of its rollouts carries the project's label `name` (not rejected)."""
    marks = Mark.objects.filter(run=OuterRef("pk"), label__project=project, label__name=name).exclude(
        status=MarkStatus.REJECTED)
    return Q(Exists(marks))
