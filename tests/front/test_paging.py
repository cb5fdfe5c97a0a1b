"""Keyset paging (front/paging.py): lists walked to the end and back by cursors, with ties and NULLs in
the sort key, give every row once in the list's order; a cursor the list did not make is a 400."""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Callable
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.factories import rollout
from tests.pager import pager_link, pager_text

pytestmark = pytest.mark.django_db


def walk(read: Callable[[str], Any]) -> tuple[list[Any], list[Any]]:
    """Every row forward from the first page by next cursors, then back from the last by prev cursors."""
    forward, pages, cursor = [], [], ""
    while True:
        page = read(cursor)
        pages.append(page)
        forward += page.rows
        if not page.next_cursor:
            break
        cursor = page.next_cursor
        assert len(pages) < 200, "the walk does not end"
    backward, page = [], pages[-1]
    backward = list(page.rows)
    while page.prev_cursor:
        page = read(page.prev_cursor)
        backward = page.rows + backward
    return forward, backward


def test_runs_table_walks_every_sort_with_ties_and_nulls(team: Any) -> None:
    from deeprepo_web.explorer.selectors import RunQuery, run_table
    from deeprepo_web.runs.models import MetricSeries, Run

    base = timezone.now()
    runs = Run.objects.bulk_create([
        Run(project=team.project, name=f"run-{i % 9}",  # names tie nine ways
            created_at=base - dt.timedelta(minutes=i // 7),  # creation times tie seven ways
            started_at=None if i % 3 == 0 else base - dt.timedelta(seconds=i % 5),  # NULLs and ties
            config={"lr": None if i % 4 == 0 else f"{i % 3}"})
        for i in range(83)
    ])
    for i, run in enumerate(runs):
        if i % 5:  # some runs have no reward at all: NULLs of the metric sort
            value = math.nan if i % 11 == 0 else float(i % 4)
            MetricSeries.objects.create(run=run, key="reward", last_value=value, last_step=1, count=1)
    for sort in ("-created", "created", "name", "-name", "-started", "started", "-metric:reward", "metric:reward"):
        for group in ("", "config.lr"):
            query = RunQuery(sort=sort, group=group)
            everything = [r.pk for r in run_table(project=team.project, query=query, per_page=1000).rows]
            forward, backward = walk(lambda c, q=query: run_table(project=team.project, query=q, cursor=c, per_page=6))
            ids = [r.pk for r in forward]
            assert ids == everything and len(set(ids)) == 83, (sort, group)
            assert [r.pk for r in backward] == everything, (sort, group)


def test_rollouts_walk_every_order_with_ties_and_nulls(team: Any) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.trajectories.selectors import ROLLOUT_ORDERS, RolloutFilter, rollout_page

    run, _ = run_create(project=team.project, name="ties")
    records = []
    for i in range(64):
        r = rollout(f"ex-{i % 6}", reward=[0.0, 1.0, 0.5][i % 3], step=None if i % 10 == 0 else i // 8,
                    uid=f"u{i}", turns=0, sample_index=i % 4)
        if i % 7 == 0:
            r["reward"] = None
        records.append(r)
    rollouts_ingest(run=run, rollouts=records)
    for order in ROLLOUT_ORDERS:
        everything = [r.pk for r in rollout_page(run=run, order=order, per_page=1000).rows]
        forward, backward = walk(lambda c, o=order: rollout_page(run=run, order=o, cursor=c, per_page=5))
        assert [r.pk for r in forward] == everything and len(set(everything)) == 64, order
        assert [r.pk for r in backward] == everything, order
    # Filters hold on every page.
    f = RolloutFilter(reward_min=0.5)
    forward, _ = walk(lambda c: rollout_page(run=run, order="-reward", cursor=c, per_page=4, filters=f))
    assert forward and all(r.reward >= 0.5 for r in forward)


def test_example_rollouts_and_artifacts_walk_with_tied_times(team: Any) -> None:
    from deeprepo_web.artifacts.models import Artifact
    from deeprepo_web.front.paging import keyset_page, newest_first
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout, Run
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.trajectories.selectors import example_rollouts_page

    same = timezone.now()
    for n in range(3):
        run, _ = run_create(project=team.project, name=f"r{n}")
        Run.objects.filter(pk=run.pk).update(created_at=same)  # three runs made in the same instant
        rollouts_ingest(run=run, rollouts=[rollout("shared", step=None if i == 0 else i // 3, uid=f"u{i}",
                                                   sample_index=None if i == 5 else i % 3, turns=0) for i in range(13)])
    ex = Rollout.objects.filter(example__key="shared").first().example
    everything = [r.pk for r in example_rollouts_page(example=ex, per_page=1000).rows]
    forward, backward = walk(lambda c: example_rollouts_page(example=ex, cursor=c, per_page=4))
    assert [r.pk for r in forward] == everything == [r.pk for r in backward] and len(set(everything)) == 39
    Artifact.objects.bulk_create([Artifact(run=run, name=f"a{i}", kind="file", size=1, sha256=f"{i:064x}",
                                           created_at=same) for i in range(11)])
    rows = Artifact.objects.filter(run=run)
    forward, backward = walk(lambda c: keyset_page(rows, keys=newest_first(), order="artifacts", cursor=c, per_page=3))
    assert [a.pk for a in forward] == sorted(rows.values_list("pk", flat=True), reverse=True)
    assert [a.pk for a in backward] == [a.pk for a in forward]


def test_groups_page_over_examples_in_memory() -> None:
    from deeprepo_web.front.paging import list_after

    items = list(range(3, 50, 2))
    forward, backward = walk(lambda c: list_after(items, key=lambda i: i, cursor=c, order="groups", kind="int",
                                                  per_page=4))
    assert forward == items == backward


def test_bad_cursors_are_refused_with_a_reason() -> None:
    from deeprepo_web.front.paging import BadCursor, SortKey, cursor_decode, cursor_encode, id_key

    keys = [SortKey("created_at", "datetime", desc=True), id_key(desc=True)]
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=dt.UTC)
    good = cursor_encode(order="jobs", forward=False, values=[when, 7])
    assert cursor_decode(good, order="jobs", keys=keys) == (False, [when, 7])
    nan = cursor_encode(order="x", forward=True, values=[math.nan, 1])
    decoded = cursor_decode(nan, order="x", keys=[SortKey("v", "float", nullable=True), id_key()])[1]
    assert math.isnan(decoded[0])
    cases = {
        "!!!": "does not decode",
        good[:-3]: "does not decode",
        good: "another order",
        cursor_encode(order="runs", forward=True, values=["yesterday", 7]): "datetime value expected",
        base64.urlsafe_b64encode(b'{"o":"runs","d":"n","v":[{"t":"yesterday"},7]}').decode(): "not a time",
        cursor_encode(order="runs", forward=True, values=[when, "7"]): "int value expected",
        cursor_encode(order="runs", forward=True, values=[when]): "wrong number of values",
        cursor_encode(order="runs", forward=True, values=[None, 7]): "a value is missing",
        "A" * 3000: "too long",
    }
    for raw, reason in cases.items():
        with pytest.raises(BadCursor, match=reason):
            cursor_decode(raw, order="runs", keys=keys)


def test_a_bad_cursor_is_a_400_on_pages_and_in_the_api(client: Any, team: Any, api: Any) -> None:
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="r")
    client.force_login(team.viewer)
    for url in (reverse("project", args=["demo"]), reverse("rollouts", args=["demo", run.public_id]),
                reverse("jobs", args=["demo"]), reverse("groups", args=["demo", run.public_id])):
        res = client.get(url, {"cursor": "not-a-cursor"})
        assert res.status_code == 400, url
        assert "bad cursor: it does not decode. Open the list from its first page" in res.content.decode()
    res = api.get(f"/runs/{run.public_id}/rollouts", cursor="eyJvIjoieCJ9")
    assert res.status_code == 400 and res.json() == {"error": "bad cursor: it does not decode"}


def test_api_rollouts_by_cursor_and_by_old_page_numbers(team: Any, api: Any) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="api")
    rollouts_ingest(run=run, rollouts=[rollout(f"e{i}", reward=i % 3 / 2, uid=f"u{i}", turns=0) for i in range(7)])
    seen, cursor = [], ""
    while True:
        page = api.get(f"/runs/{run.public_id}/rollouts", order="-reward", per_page=3,
                       **({"cursor": cursor} if cursor else {})).json()
        seen += [r["id"] for r in page["rollouts"]]
        assert page["has_next"] is (page["next_cursor"] is not None)
        if not page["next_cursor"]:
            break
        cursor = page["next_cursor"]
    old = [r["id"] for n in (1, 2, 3) for r in api.get(f"/runs/{run.public_id}/rollouts", order="-reward",
                                                        per_page=3, page=n).json()["rollouts"]]
    assert seen == old and len(set(seen)) == 7
    assert api.get(f"/runs/{run.public_id}/rollouts", per_page=3, page=2).json()["page"] == 2


def test_pager_markup_on_paged_pages(client: Any, team: Any) -> None:
    """One pager: a nav named for its list, the same words everywhere, no page numbers, no count."""
    from deeprepo_web.jobs.models import Cluster, Job
    from deeprepo_web.runs.models import Run

    Run.objects.bulk_create([Run(project=team.project, name=f"r{i:02d}") for i in range(55)])
    cluster = Cluster.objects.filter(project=team.project).first() or Cluster.objects.create(
        project=team.project, name="here", kind="local")
    Job.objects.bulk_create([Job(project=team.project, cluster=cluster, name=f"j{i}", public_id=f"job{i:04d}")
                             for i in range(52)])
    client.force_login(team.viewer)
    runs = client.get(reverse("project", args=["demo"])).content.decode()
    assert '<nav class="pager" aria-label="Runs pages">' in runs
    assert pager_text(runs) == "50 runs on this page Next →" and "Page 1" not in runs
    last = client.get(pager_link(runs, "next")).content.decode()
    assert pager_text(last) == "« First ← Previous 5 runs on this page"
    back = client.get(pager_link(last, "prev")).content.decode()
    assert pager_text(back) == "50 runs on this page Next →"  # back at the start: no First, no Previous
    jobs = client.get(reverse("jobs", args=["demo"])).content.decode()
    assert '<nav class="pager" aria-label="Jobs pages">' in jobs and pager_text(jobs) == "50 jobs on this page Next →"
    assert "2 jobs on this page" in pager_text(client.get(pager_link(jobs, "next")).content.decode())
