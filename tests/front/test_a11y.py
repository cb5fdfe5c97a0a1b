"""Accessibility of the shared page parts: the skip link, sortable headers, tabs, the runs table's one
column list, and the "Show numbers" table of server-drawn charts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deeprepo_web.explorer.columns import TABLE
from deeprepo_web.reports.svg import Line, line_chart

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(team: Any) -> Any:
    from deeprepo_web.runs.services import run_create

    made, _ = run_create(project=team.project, name="a11y-run", status="finished", config={"lr": 0.1})
    return made


def test_skip_link_is_the_first_focusable_element(client: Any, team: Any, run: Any) -> None:
    client.force_login(team.viewer)
    html = client.get("/p/demo/").content.decode()
    body = html[html.index("<body"):]
    first_link = re.search(r"<(a|button|input|select|textarea)\b[^>]*>", body)
    assert first_link and first_link.group(0) == '<a class="skip-link" href="#content">'
    assert ">Skip to content</a>" in body and '<main id="content" tabindex="-1">' in body


def test_runs_table_header_cells_and_colspans_come_from_one_list(client: Any, team: Any, run: Any) -> None:
    client.force_login(team.viewer)
    html = client.get("/p/demo/?sort=-name&group=lr").content.decode()
    head = html[html.index("<thead>"):html.index("</thead>")]
    assert head.count('<th scope="col"') == len(TABLE) == 12
    # sortable headers say how the table is sorted; the others say nothing
    assert re.search(r'<th scope="col" aria-sort="descending"><a class="sort active"[^>]*>Name', head)
    assert re.search(r'<th scope="col" class="c-status" aria-sort="none">', head)
    assert head.count("aria-sort=") == sum(1 for c in TABLE if c.sort) == 7
    row = html[html.index('<tr data-run="'):]
    row = row[:row.index("</tr>")]
    assert row.count("<td") == len(TABLE)  # one cell per header
    assert f'<tr class="group-row"><td colspan="{len(TABLE)}">' in html
    empty = client.get("/p/demo/?q=nothing-matches").content.decode()
    assert f'<td colspan="{len(TABLE)}" class="muted empty">No run matches' in empty


def test_config_columns_widen_the_colspan(client: Any, team: Any, run: Any) -> None:
    client.force_login(team.owner)
    client.post("/p/demo/columns/", {"col": ["status"], "config": ["lr"], "next": "/p/demo/"})
    html = client.get("/p/demo/?q=nothing-matches").content.decode()
    assert '<th scope="col" class="cfg" title="config.lr">' in html
    assert f'<td colspan="{len(TABLE) + 1}" class="muted empty">' in html


def test_rollouts_table_sortable_headers(client: Any, team: Any, run: Any) -> None:
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{run.public_id}/rollouts/?sort=reward").content.decode()
    assert '<th scope="col" class="num" aria-sort="ascending"><a class="sort asc"' in html
    assert html.count('aria-sort="none"') == 2  # turns, tokens


def test_active_tab_is_marked_current(client: Any, team: Any, run: Any) -> None:
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{run.public_id}/rollouts/").content.decode()
    tabs = html[html.index('<nav class="tabs" aria-label="Run">'):]
    tabs = tabs[:tabs.index("</nav>")]
    assert tabs.count('aria-current="page"') == 1
    assert re.search(r'<a href="[^"]*/rollouts/" class="active" aria-current="page">Rollouts</a>', tabs)
    jobs = client.get("/p/demo/jobs/").content.decode()
    assert re.search(r'class="active" aria-current="page">Jobs</a>', jobs)


def test_server_drawn_chart_has_its_numbers_as_a_table() -> None:
    html = line_chart([Line("reward <mean>", "#000", [0, 10, 20], [0.25, None, 0.75]),
                       Line("pass", "#111", [10], [1 / 3])], title="reward")
    numbers = html[html.index('<details class="chart-numbers"><summary>Show numbers</summary>'):]
    assert '<th scope="col">step</th><th scope="col">reward &lt;mean&gt;</th><th scope="col">pass</th>' in numbers
    assert '<tr><th scope="row" class="num">0</th><td class="num">0.25</td><td class="num">—</td></tr>' in numbers
    assert '<tr><th scope="row" class="num">10</th><td class="num">—</td><td class="num">0.333333</td></tr>' in numbers
    assert '<td class="num">0.75</td>' in numbers
