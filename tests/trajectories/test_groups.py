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


def test_default_step_is_the_latest_and_picker_lists_steps(viewer, loaded):
    html = viewer.get(reverse("groups", args=["demo", loaded.run.public_id])).content.decode()
    assert "Step <b>1</b>" in html
    assert '<option value="0" >0</option>' in html.replace("  ", " ") or 'value="0"' in html
    assert 'href="?step=0"' in html  # previous-step arrow


def test_eval_run_has_one_null_step(viewer, loaded):
    from deeprepo_web.trajectories.selectors import rollout_steps

    assert rollout_steps(run=loaded.eval_run) == [None]
    assert rollout_steps(run=loaded.run) == [0, 1]
    html = viewer.get(reverse("groups", args=["demo", loaded.eval_run.public_id])).content.decode()
    assert "Eval:" in html and "eval (no step)" in html
    assert "<b>1</b> group " in html


def test_groups_are_paged_over_examples(viewer, team):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create
    from tests.factories import rollout

    run, _ = run_create(project=team.project, name="many")
    rollouts_ingest(run=run, rollouts=[rollout(f"k{i:02d}", step=3, sample_index=j, reward=j / 2, turns=0)
                                       for i in range(25) for j in range(2)])
    url = reverse("groups", args=["demo", run.public_id])
    first = viewer.get(url).content.decode()
    assert first.count('<section class="tj-group') == 20 and "more examples" in first
    assert "<b>25</b> groups" in first  # the summary covers the whole step
    second = viewer.get(url, {"step": "3", "page": "2"}).content.decode()
    assert second.count('<section class="tj-group') == 5 and "more examples" not in second


def test_htmx_partial_and_bad_step(viewer, loaded):
    url = reverse("groups", args=["demo", loaded.run.public_id])
    res = viewer.get(url, {"step": "0"}, headers={"HX-Request": "true", "HX-Target": "groups-body"})
    assert res.content.decode().lstrip().startswith('<div id="groups-body"')
    html = viewer.get(url, {"step": "x"}).content.decode()
    assert "step: &#x27;x&#x27; is not a whole number" in html and "Step <b>1</b>" in html
