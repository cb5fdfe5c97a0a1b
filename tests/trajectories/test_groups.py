"""Groups page: per-example GRPO stats on a known case, dead-group flags, step picker, eval runs."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse


@pytest.fixture
def viewer(client, team):
    client.force_login(team.viewer)
    return client


def test_group_stats_and_dead_flags_on_a_known_step(viewer, loaded):
    from deeprepo_web.trajectories.selectors import groups_for_step

    result = groups_for_step(run=loaded.run, step=1)
    by_key = {g.example.key: g for g in result.groups}
    a, b, c = by_key["ex-a"], by_key["ex-b"], by_key["ex-c"]
    assert a.stats.dead == "all_fail" and b.stats.dead == "all_pass" and c.stats.dead is None
    # ex-c rewards [0, 0.5, 1, 1]: mean 0.625, std sqrt(0.171875) (population), advantages (r - mean) / std.
    assert c.stats.mean == pytest.approx(0.625)
    std = 0.171875 ** 0.5
    assert c.stats.std == pytest.approx(std)
    advs = [r.group_advantage for r in c.rollouts]
    assert advs == pytest.approx([(x - 0.625) / std for x in [0, 0.5, 1, 1]])
    assert [r.group_advantage for r in a.rollouts] == [0, 0, 0, 0]
    assert (result.n_groups, result.n_dead, result.n_all_fail, result.n_all_pass) == (3, 2, 1, 1)
    assert result.dead_frac == pytest.approx(2 / 3)


def test_groups_page_shows_summary_chips_and_links(viewer, loaded):
    url = reverse("groups", args=["demo", loaded.run.public_id])
    html = viewer.get(url, {"step": "1"}).content.decode()
    assert "<b>3</b> groups" in html
    assert "dead <b class=\"error\">67%</b>" in html
    assert "1 all-fail, 1 all-pass" in html
    assert html.count("dead · all fail") == 1 and html.count("dead · all pass") == 1
    # Every rollout of the step is a chip linking to its trajectory, with its advantage.
    chips = re.findall(r'class="chip" href="/p/demo/runs/[^/]+/rollouts/(\d+)/"', html)
    assert {int(i) for i in chips} == {v for k, v in loaded.ids.items() if k.startswith("s1-")}
    assert "+0.90" in html and "-1.51" in html  # ex-c: (1 - 0.625) / 0.4146 and (0 - 0.625) / 0.4146


def test_default_step_is_the_latest_and_the_step_input_goes_to_existing_steps(viewer, loaded):
    html = viewer.get(reverse("groups", args=["demo", loaded.run.public_id])).content.decode()
    assert "Step <b>1</b>" in html
    # A number input holding the step, not one <option> per step; the range says which exist.
    assert '<input type="number" name="step" value="1" step="1" min="0" max="1"' in html and "<option" not in html
    assert "steps 0–1" in html
    assert 'href="?step=0"' in html and "← step 0" in html  # previous existing step
    assert "step 2 →" not in html  # the latest step has no next


def test_eval_run_has_one_null_step(viewer, loaded):
    from deeprepo_web.trajectories.selectors import rollout_steps

    assert rollout_steps(run=loaded.eval_run) == [None]
    assert rollout_steps(run=loaded.run) == [0, 1]
    html = viewer.get(reverse("groups", args=["demo", loaded.eval_run.public_id])).content.decode()
    assert "Eval:" in html and 'href="?step=null"' in html and "eval (no step)" in html
    assert "<b>1</b> group " in html


def test_groups_are_paged_over_examples(viewer, team):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout
    from tests.pager import pager_link, pager_text

    run, _ = run_create(project=team.project, name="many")
    rollouts_ingest(run=run, rollouts=[rollout(f"k{i:02d}", step=3, sample_index=j, reward=j / 2, turns=0)
                                       for i in range(25) for j in range(2)])
    url = reverse("groups", args=["demo", run.public_id])
    first = viewer.get(url).content.decode()
    assert first.count('<section class="tj-group') == 20 and pager_text(first) == "20 examples on this page Next →"
    assert "<b>25</b> groups" in first  # the summary covers the whole step
    second = viewer.get(pager_link(first, "next")).content.decode()
    assert second.count('<section class="tj-group') == 5 and pager_link(second, "next") is None
    assert "<b>25</b> groups" in second and "Step <b>3</b>" in second
    back = viewer.get(pager_link(second, "prev")).content.decode()
    assert back.count('<section class="tj-group') == 20 and pager_link(back, "prev") is None


def test_htmx_partial_and_bad_step(viewer, loaded):
    url = reverse("groups", args=["demo", loaded.run.public_id])
    res = viewer.get(url, {"step": "0"}, headers={"HX-Request": "true", "HX-Target": "groups-body"})
    assert res.content.decode().lstrip().startswith('<div id="groups-body"')
    html = viewer.get(url, {"step": "x"}).content.decode()
    assert "step: &#x27;x&#x27; is not a whole number" in html and "Step <b>1</b>" in html


def test_step_arrows_skip_to_the_steps_that_exist(viewer, team):
    """Steps 0, 10 and 500 (and an unstepped rollout): the arrows go to those, never to step ± 1, and a
    step without rollouts still offers the nearest ones on each side."""
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.trajectories.selectors import step_nav
    from tests.factories import rollout

    run, _ = run_create(project=team.project, name="sparse")
    rollouts_ingest(run=run, rollouts=[rollout("a", step=s, uid=f"u{s}", turns=0) for s in (0, 10, 500)]
                    + [rollout("a", step=None, uid="eval", turns=0)])
    url = reverse("groups", args=["demo", run.public_id])
    html = viewer.get(url, {"step": "10"}).content.decode()
    assert "← step 0" in html and "step 500 →" in html and "step 11" not in html
    gap = viewer.get(url, {"step": "200"}).content.decode()
    assert "← step 10" in gap and "step 500 →" in gap and "No rollouts at this step." in gap
    first = viewer.get(url, {"step": "0"}).content.decode()
    assert "← eval (no step)" in first and "step 10 →" in first
    nav = step_nav(run=run, step=None)
    assert (nav.has_prev, nav.next, nav.first, nav.last, nav.unstepped) == (False, 0, 0, 500, True)
    # Without JS the form submits the typed step; with htmx it swaps the body in place.
    res = viewer.get(url, {"step": "500"}, headers={"HX-Request": "true", "HX-Target": "groups-body"})
    body = res.content.decode()
    assert body.lstrip().startswith('<div id="groups-body"') and "Step <b>500</b>" in body


def test_step_nav_reads_a_bounded_number_of_rows(viewer, team, django_assert_max_num_queries):
    """The picker's cost does not grow with the step count: 300 steps, one query for the neighbours."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.trajectories.selectors import step_nav
    from tests.factories import rollout

    run, _ = run_create(project=team.project, name="long")
    rollouts_ingest(run=run, rollouts=[rollout("a", step=s, uid=f"u{s}", turns=0) for s in range(300)])
    with CaptureQueriesContext(connection) as ctx:
        nav = step_nav(run=run, step=150)
    assert (nav.prev, nav.next, nav.first, nav.last) == (149, 151, 0, 299) and len(ctx.captured_queries) == 1
    html = viewer.get(reverse("groups", args=["demo", run.public_id])).content.decode()
    assert "Step <b>299</b>" in html and "<option" not in html and html.count("step 298") == 1
