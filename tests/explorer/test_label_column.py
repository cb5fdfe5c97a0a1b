"""The explorer's label filter (runs with a marked rollout) and its labels column (marked rollouts per run)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.factories import rollout

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true", "HX-Target": "runs-table"}


def names(html: str) -> list[str]:
    return re.findall(r'<td class="name"><a href="[^"]+">([^<]+)</a>', html)


def label_cells(html: str) -> dict[str, str]:
    """run name -> the text of its labels cell, tags stripped and spaces squeezed."""
    out = {}
    for row in re.findall(r'<tr data-run="[^"]+">(.*?)</tr>', html, re.S):
        name = re.search(r'<td class="name"><a href="[^"]+">([^<]+)</a>', row)
        cell = re.search(r'<td class="labels c-labels">(.*?)</td>', row, re.S)
        assert name and cell, row
        out[name.group(1)] = " ".join(re.sub(r"<[^>]+>", " ", cell.group(1)).split())
    return out


@pytest.fixture
def marked(team: Any, seeded: Any) -> dict[str, Any]:
    """alpha: 3 of 4 rollouts "gives up" (one also on a turn); beta: one "edits test", one proposed "gives up";
    gamma: only a rejected "gives up" (a judge was wrong: it does not count)."""
    from deeprepo_web.labels.models import MarkStatus
    from deeprepo_web.labels.services import label_create, mark_create
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout

    gives_up = label_create(project=team.project, name="gives up", colour="#d9480f")
    edits = label_create(project=team.project, name="edits <b>test</b>", colour="#ffd43b")
    label_create(project=team.project, name="unused")
    for run, prefix in ((seeded.beta, "b"), (seeded.gamma, "g")):
        rollouts_ingest(run=run, rollouts=[rollout("ex-0", reward=0.1, step=0, sample_index=i, uid=f"{prefix}{i}",
                                                   turns=1) for i in range(2)])
    alpha = list(Rollout.objects.filter(run=seeded.alpha).order_by("id"))
    beta = list(Rollout.objects.filter(run=seeded.beta).order_by("id"))
    gamma = list(Rollout.objects.filter(run=seeded.gamma).order_by("id"))
    for r in alpha[:3]:
        mark_create(label=gives_up, rollout=r, user=team.owner)
    mark_create(label=gives_up, rollout=alpha[0], user=team.owner, turn_index=0)  # same rollout: still 3
    mark_create(label=edits, rollout=beta[0], user=team.owner)
    mark_create(label=gives_up, rollout=beta[1], user=None, status=MarkStatus.PROPOSED, source="judge:1")
    mark_create(label=gives_up, rollout=gamma[0], user=None, status=MarkStatus.REJECTED, source="judge:1")
    return {"gives_up": gives_up, "edits": edits}


def test_label_filter_keeps_runs_with_a_marked_rollout_and_counts_them(client: Any, team: Any, seeded: Any,
                                                                       marked: Any) -> None:
    client.force_login(team.viewer)  # viewers read labels too
    html = client.get("/p/demo/", {"label": "gives up"}, headers=HX).content.decode()
    assert names(html) == ["beta-grpo", "alpha-grpo"]  # gamma's only mark was rejected; the eval has none
    assert label_cells(html) == {"beta-grpo": "gives up 1", "alpha-grpo": "gives up 3"}
    assert "Marked gives up" in html
    # Each count links to those rollouts, in the run's rollouts table filtered by the label.
    alpha_url = f"/p/demo/runs/{seeded.alpha.public_id}/rollouts/?label=gives+up"
    assert f'href="{alpha_url}"' in html
    page = client.get(alpha_url).content.decode()
    assert page.count('<td class="tj-key">') == 3  # the 3 marked rollouts of alpha's 4

    html = client.get("/p/demo/", {"label": "edits <b>test</b>"}, headers=HX).content.decode()
    assert names(html) == ["beta-grpo"] and label_cells(html) == {"beta-grpo": "edits &lt;b&gt;test&lt;/b&gt; 1"}
    html = client.get("/p/demo/", {"label": "unused"}, headers=HX).content.decode()
    assert names(html) == [] and "No run matches these filters." in html


def test_without_a_label_the_column_lists_every_label_most_first(client: Any, team: Any, seeded: Any,
                                                                 marked: Any) -> None:
    client.force_login(team.viewer)
    html = client.get("/p/demo/", headers=HX).content.decode()
    assert label_cells(html) == {"alpha-eval-300": "", "gamma-grpo": "", "beta-grpo": "edits &lt;b&gt;test&lt;/b&gt; 1 gives up 1",
                                 "alpha-grpo": "gives up 3"}
    assert "<b>test</b>" not in html  # a label name is text, never markup
    full = client.get("/p/demo/").content.decode()
    options = re.search(r'<select name="label"[^>]*>(.*?)</select>', full, re.S)
    assert options is not None
    assert re.findall(r'<option value="([^"]*)"', options.group(1)) == ["", "edits &lt;b&gt;test&lt;/b&gt;", "gives up",
                                                                         "unused"]


def test_label_filter_is_for_members_only(client: Any, team: Any, seeded: Any, marked: Any) -> None:
    client.force_login(team.outsider)
    assert client.get("/p/demo/", {"label": "gives up"}).status_code == 404
    assert client.get("/p/demo/rows/", {"ids": seeded.alpha.public_id, "label": "gives up"}).status_code == 404
    # The outsider's own project has no such runs: the name of a label elsewhere finds nothing.
    html = client.get("/p/other/", {"label": "gives up"}, headers=HX).content.decode()
    assert names(html) == []


def test_live_rows_keep_the_chosen_label_count(client: Any, team: Any, seeded: Any, marked: Any) -> None:
    client.force_login(team.viewer)
    rows = client.get("/p/demo/rows/", {"ids": seeded.beta.public_id, "label": "gives up"}).json()["rows"]
    assert label_cells(rows[seeded.beta.public_id]) == {"beta-grpo": "gives up 1"}
    rows = client.get("/p/demo/rows/", {"ids": seeded.beta.public_id}).json()["rows"]
    assert label_cells(rows[seeded.beta.public_id]) == {"beta-grpo": "edits &lt;b&gt;test&lt;/b&gt; 1 gives up 1"}


def test_labels_cost_a_fixed_number_of_queries(client: Any, team: Any, seeded: Any, marked: Any,
                                               django_assert_max_num_queries: Any) -> None:
    from deeprepo_web.labels.services import mark_create
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create

    for i in range(30):
        run, _ = run_create(project=team.project, name=f"extra-{i}")
        rollouts_ingest(run=run, rollouts=[rollout("ex-0", reward=0.1, step=0, sample_index=0, uid=f"x{i}")])
        mark_create(label=marked["gives_up" if i % 2 else "edits"], rollout=Rollout.objects.get(run=run),
                    user=team.owner)
    client.force_login(team.owner)
    with django_assert_max_num_queries(9):  # the bound of test_rewards_cost_a_fixed_number_of_queries
        html = client.get("/p/demo/", headers=HX).content.decode()
    assert html.count('class="label-chip small"') == 30 + 3  # alpha 1, beta 2
    with django_assert_max_num_queries(9):
        html = client.get("/p/demo/", {"label": "gives up"}, headers=HX).content.decode()
    assert len(names(html)) == 15 + 2
