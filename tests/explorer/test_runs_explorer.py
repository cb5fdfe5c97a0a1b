"""The runs explorer: filters, metric sort, group by config, sparkline and last reward, paging."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true", "HX-Target": "runs-table"}


def names(html: str) -> list[str]:
    return re.findall(r'<td class="name"><a href="[^"]+">([^<]+)</a>', html)


def table(client: Any, team: Any, **params: Any) -> str:
    client.force_login(team.owner)
    res = client.get("/p/demo/", params, headers=HX)
    assert res.status_code == 200
    html = res.content.decode()
    # The htmx answer is the table partial alone, not a whole page.
    assert html.lstrip().startswith('<div id="runs-table"') and "<html" not in html
    return html


def test_full_page_lists_runs_newest_first_with_filters(client: Any, team: Any, seeded: Any) -> None:
    client.force_login(team.viewer)
    html = client.get("/p/demo/").content.decode()
    assert names(html) == ["alpha-eval-300", "gamma-grpo", "beta-grpo", "alpha-grpo"]
    assert 'id="run-filters"' in html and 'hx-push-url="true"' in html
    assert '<option value="llama-8b"' in html and '<option value="paper"' in html
    assert '<option value="-metric:reward"' in html


@pytest.mark.parametrize(("params", "expected"), [
    ({"status": "running"}, ["beta-grpo"]),
    ({"kind": "eval"}, ["alpha-eval-300"]),
    ({"model": "qwen-8b", "kind": "train"}, ["gamma-grpo", "alpha-grpo"]),
    ({"environment": "swe-bench"}, ["beta-grpo"]),
    ({"tag": "paper"}, ["beta-grpo"]),
    ({"q": "ALPHA"}, ["alpha-eval-300", "alpha-grpo"]),
    ({"q": "sandbox"}, ["alpha-grpo"]),
    ({"q": "nothing-like-this"}, []),
])
def test_filters_give_the_right_rows(client: Any, team: Any, seeded: Any, params: dict[str, str],
                                     expected: list[str]) -> None:
    html = table(client, team, **params)
    assert names(html) == expected
    if not expected:
        assert "No run matches these filters." in html


def test_sort_by_last_value_of_a_metric(client: Any, team: Any, seeded: Any) -> None:
    # Last rewards: beta 0.9, alpha 0.41, gamma 0.05; the eval has none and goes last either way.
    assert names(table(client, team, sort="-metric:reward")) == ["beta-grpo", "alpha-grpo", "gamma-grpo",
                                                                   "alpha-eval-300"]
    assert names(table(client, team, sort="metric:reward")) == ["gamma-grpo", "alpha-grpo", "beta-grpo",
                                                                  "alpha-eval-300"]
    assert names(table(client, team, sort="metric:loss/policy"))[:3] == ["beta-grpo", "alpha-grpo", "gamma-grpo"]
    assert names(table(client, team, sort="name")) == ["alpha-eval-300", "alpha-grpo", "beta-grpo", "gamma-grpo"]


def test_group_by_config_key(client: Any, team: Any, seeded: Any) -> None:
    html = table(client, team, group="config.lr", sort="name")
    groups = re.findall(r'<tr class="group-row">.*?<strong>([^<]+)</strong>', html)
    assert groups == ["0.001", "0.01", "—"]
    assert names(html) == ["alpha-grpo", "gamma-grpo", "beta-grpo", "alpha-eval-300"]
    nested = table(client, team, group="config.optim.name")
    assert re.findall(r'<strong>([^<]+)</strong>', nested)[0] == "adamw"


def test_last_reward_and_sparkline_are_shown(client: Any, team: Any, seeded: Any) -> None:
    html = table(client, team, q="beta")
    assert '<td class="num reward c-reward" title="reward">0.9</td>' in html
    points = re.findall(r'<polyline points="([^"]+)"', html)
    assert len(points) == 1 and len(points[0].split()) == 3
    # The highest value is drawn at the top (y = 1) and the lowest at the bottom.
    ys = [float(p.split(",")[1]) for p in points[0].split()]
    assert ys[-1] == 1.0 and ys[0] == 21.0
    assert "<polyline" not in table(client, team, kind="eval")


def test_rewards_cost_a_fixed_number_of_queries(client: Any, team: Any, seeded: Any,
                                                django_assert_max_num_queries: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_create

    for i in range(30):
        run, _ = run_create(project=team.project, name=f"extra-{i}")
        metrics_ingest(run=run, points=[{"step": s, "values": {"reward": s / 10}} for s in range(5)])
    client.force_login(team.owner)
    with django_assert_max_num_queries(9):  # 8 + the user's chosen columns (explorer.columns)
        html = client.get("/p/demo/", headers=HX).content.decode()
    assert html.count("<polyline") == 33


def test_paging_shows_fifty_and_a_next_link(client: Any, team: Any) -> None:
    from deeprepo_web.runs.models import Run

    Run.objects.bulk_create([Run(project=team.project, name=f"run-{i:03d}") for i in range(51)])
    from tests.pager import pager_link, pager_text

    html = table(client, team, sort="name")
    assert len(names(html)) == 50 and names(html)[0] == "run-000"
    nxt = pager_link(html, "next")
    assert nxt is not None and "cursor=" in nxt and "sort=name" in nxt
    assert pager_text(html) == "50 runs on this page Next →"
    second = client.get(nxt, headers=HX).content.decode()
    assert names(second) == ["run-050"] and pager_link(second, "next") is None
    assert pager_text(second) == "« First ← Previous 1 run on this page"


def test_model_text_is_escaped(client: Any, team: Any) -> None:
    from deeprepo_web.runs.services import run_create

    run_create(project=team.project, name="<script>alert(1)</script>", tags=['"><img src=x onerror=alert(1)>'],
               notes="<b>bold</b>")
    html = table(client, team)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "<b>bold" not in html


def test_bad_sort_and_group_fall_back_quietly(client: Any, team: Any, seeded: Any) -> None:
    assert len(names(table(client, team, sort="-no_such_column", group="notconfig.x", page="zz"))) == 4
