"""The rollouts table: every filter and sort, paging without COUNT, htmx partial, plain links."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse


@pytest.fixture
def url(loaded):
    return reverse("rollouts", args=["demo", loaded.run.public_id])


def _uids(res, loaded) -> list[str]:
    by_id = {v: k for k, v in loaded.ids.items()}
    html = res.content.decode()
    ids = re.findall(r'/rollouts/(\d+)/"', html)
    return [by_id[int(i)] for i in ids]


@pytest.fixture
def viewer(client, team):
    client.force_login(team.viewer)
    return client


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"step": "1"}, lambda u: u.startswith("s1-")),
        ({"example": "EX-B"}, lambda u: "-ex-b-" in u),
        ({"reward_min": "0.5"}, None),
        ({"reward_max": "0.25"}, None),
        ({"stop": "max_turns"}, lambda u: u.endswith("ex-b-2")),
        ({"error": "yes"}, lambda u: u.endswith("ex-c-1")),
        ({"error": "no"}, lambda u: not u.endswith("ex-c-1")),
        ({"truncated": "yes"}, lambda u: u.endswith("ex-b-2")),
        ({"truncated": "no"}, lambda u: not u.endswith("ex-b-2")),
    ],
)
def test_each_filter_keeps_exactly_the_matching_rollouts(viewer, url, loaded, params, expected):
    from deeprepo_web.runs.models import Rollout

    res = viewer.get(url, params)
    assert res.status_code == 200
    shown = set(_uids(res, loaded))
    train = {u for u in loaded.ids if u.startswith("s")}
    if "reward_min" in params:
        want = set(Rollout.objects.filter(run=loaded.run, reward__gte=0.5).values_list("uid", flat=True))
    elif "reward_max" in params:
        want = set(Rollout.objects.filter(run=loaded.run, reward__lte=0.25).values_list("uid", flat=True))
    else:
        want = {u for u in train if expected(u)}
    assert shown == want
    assert want  # every case matches something


def test_filters_combine(viewer, url, loaded):
    res = viewer.get(url, {"step": "0", "example": "ex-c", "reward_min": "1"})
    assert _uids(res, loaded) == ["s0-ex-c-3"]


def test_bad_filter_values_are_named_and_ignored(viewer, url, loaded):
    res = viewer.get(url, {"step": "two", "reward_min": "nan", "error": "maybe"})
    html = res.content.decode()
    assert res.status_code == 200
    assert "step: &#x27;two&#x27; is not a whole number" in html
    assert "reward_min: &#x27;nan&#x27; is not a number" in html
    assert "error: use yes or no" in html
    assert len(_uids(res, loaded)) == 24  # nothing filtered


@pytest.mark.parametrize(("sort", "key"), [("reward", "reward"), ("turns", "num_turns"), ("tokens", "tokens")])
def test_sorts_both_ways(viewer, url, loaded, sort, key):
    from deeprepo_web.runs.models import Rollout

    values = {r.uid: (r.reward if key == "reward" else r.num_turns if key == "num_turns"
                      else (r.input_tokens or 0) + (r.output_tokens or 0))
              for r in Rollout.objects.filter(run=loaded.run)}
    up = [values[u] for u in _uids(viewer.get(url, {"sort": sort}), loaded)]
    down = [values[u] for u in _uids(viewer.get(url, {"sort": f"-{sort}"}), loaded)]
    assert up == sorted(up) and len(up) == 24
    assert down == sorted(down, reverse=True)
    assert up[0] != up[-1]


def test_pages_of_50_with_a_next_link_and_no_count(viewer, url, loaded, django_assert_max_num_queries):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from tests.factories import rollout
    from tests.pager import pager_link, pager_text

    rollouts_ingest(run=loaded.run, rollouts=[rollout(f"bulk-{i}", step=5, uid=f"b{i}", turns=0) for i in range(60)])
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx, django_assert_max_num_queries(12):
        first = viewer.get(url)
    assert not [q for q in ctx.captured_queries if "COUNT(" in q["sql"].upper()]
    html = first.content.decode()
    assert len(re.findall(r'/rollouts/(\d+)/"', html)) == 50
    assert pager_text(html) == "50 rollouts on this page Next →"
    second = viewer.get(pager_link(html, "next"))
    assert len(re.findall(r'/rollouts/(\d+)/"', second.content.decode())) == Rollout.objects.filter(
        run=loaded.run).count() - 50
    assert pager_link(second.content.decode(), "next") is None
    assert "← Previous" in pager_text(second.content.decode())


def test_htmx_request_gets_only_the_table(viewer, url, loaded):
    res = viewer.get(url, {"step": "1"}, headers={"HX-Request": "true", "HX-Target": "rollout-table"})
    html = res.content.decode()
    assert html.lstrip().startswith('<div id="rollout-table"')
    assert "<html" not in html and "tj-filters" not in html
    # Sort links keep the filters (app.js loads the same href into the table).
    assert 'href="?sort=-reward&amp;step=1"' in html


def test_reward_bar_and_badges(viewer, url, loaded):
    html = viewer.get(url, {"step": "0", "example": "ex-c"}).content.decode()
    assert 'class="badge bad"' in html  # the errored rollout
    assert 'style="width:100%"' in html  # reward 1.0 fills the bar
    html = viewer.get(url, {"truncated": "yes"}).content.decode()
    assert 'class="badge warn">truncated' in html


def test_rollouts_without_a_logged_advantage_show_their_groups(viewer, team):
    """The list shows the advantage the trajectory page shows: the group's, marked "(group)"."""
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout

    run, _ = run_create(project=team.project, name="no-adv")
    rollouts_ingest(run=run, rollouts=[rollout("ex-a", reward=float(i % 2), step=0, sample_index=i, uid=f"a{i}")
                                       for i in range(4)])
    assert Rollout.objects.filter(run=run, advantage__isnull=False).count() == 0
    listed = viewer.get(reverse("rollouts", args=["demo", run.public_id])).content.decode()
    first = Rollout.objects.get(run=run, sample_index=1)
    page = viewer.get(reverse("trajectory", args=["demo", run.public_id, first.pk])).content.decode()
    shown = re.search(r'class="tj-adv-group"[^>]*>([^<]+)<', page)
    assert shown is not None
    row = re.search(rf'/rollouts/{first.pk}/".*?</tr>', listed, re.S)
    assert row is not None and f"{shown.group(1).strip()} <span class=\"muted small\">(group)</span>" in row.group(0)


@pytest.mark.parametrize(("sort", "index", "column"), [
    ("reward", "rollout_run_reward_id", 'ORDER BY "runs_rollout"."reward"'),
    ("-reward", "rollout_run_reward_desc", 'ORDER BY "runs_rollout"."reward"'),
    ("turns", "rollout_run_turns", 'ORDER BY "runs_rollout"."num_turns"'),
    ("-turns", "rollout_run_turns", 'ORDER BY "runs_rollout"."num_turns"'),
    ("tokens", "rollout_run_tokens", 'AS "total_tokens"'),  # ordered by its position in the SELECT
    ("-tokens", "rollout_run_tokens", 'AS "total_tokens"'),
])
def test_a_run_sorted_by_a_column_is_read_in_that_order_not_sorted(viewer, url, loaded, sort, index, column):
    """A run of 300,000 rollouts sorted its rows for every page: 264 ms by reward, ~200 ms by turns or tokens
    (docs/scale.md). Postgres is told to avoid sequential scans and sorts: a plan that still sorts means no
    index holds the page's order (the tokens' index must match the list's expression exactly)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from tests.factories import rollout
    from tests.pager import pager_link
    from tests.plans import plan

    rollouts_ingest(run=loaded.run, rollouts=[
        rollout(f"bulk-{i}", step=5, uid=f"b{i}", turns=0, num_turns=i % 4, reward=None if i % 7 == 0 else (i % 5) / 4,
                input_tokens=None if i % 6 == 0 else 10 * i, output_tokens=None if i % 5 == 0 else i)
        for i in range(60)])
    plans = []
    page = url + f"?sort={sort}"
    for _ in range(2):  # the first page and the next (its cursor's bound)
        with CaptureQueriesContext(connection) as ctx:
            html = viewer.get(page).content.decode()
        listed = [q["sql"] for q in ctx.captured_queries if 'FROM "runs_rollout"' in q["sql"] and column in q["sql"]]
        assert len(listed) == 1
        page = pager_link(html, "next")
        plans.append(plan(listed[0], off=("seqscan", "sort", "incremental_sort")))
    for explained in plans:
        assert index in explained and "Sort" not in explained, explained
