"""What reading a report costs the database (issue 27, speed): a published report reads its frozen
data only — a fixed number of queries that touch no run data, however much the runs grow, whether
the member or a share link's reader opens it; a draft stamps all its panels' runs in one query and
computes again only the panels whose runs moved."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from deeprepo_web.reports import services
from deeprepo_web.reports.models import Report
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Rollout
from deeprepo_web.sharing.services import share_create
from tests.compare.seed002 import rollouts_for
from tests.reports.conftest import page_text

pytestmark = pytest.mark.django_db

# Tables that hold run data: a published report's page reads none of them.
RUN_DATA = re.compile(r'\b(runs_rollout|runs_metric\w*|runs_turn|runs_toolcall|runs_example|labels_mark|'
                      r'labels_label|search_doc\w*|runs_run)\b')
# What computing a panel reads beyond the stamp (metric points, turns, tool calls, examples).
PANEL_DATA = re.compile(r'\b(runs_metric|runs_turn|runs_toolcall|runs_example)\b')


def _report(team: Any, seeded: dict[str, Any], three: list[Any], repeat: int = 1) -> Report:
    ids = [r.public_id for r in three]
    train = seeded["train"]
    first = Rollout.objects.filter(run=three[1]).order_by("id").first()
    blocks: list[dict[str, Any]] = [{"kind": "text", "text": "## Results"}]
    for _ in range(repeat):
        blocks += [{"kind": "compare", "params": {"runs": ids}},
                   {"kind": "per_example", "params": {"runs": ids}},
                   {"kind": "label_rates", "params": {"runs": ids}},
                   {"kind": "eval_summary", "params": {"run": ids[1]}},
                   {"kind": "raw_summary", "params": {"run": ids[1]}},
                   {"kind": "curves", "params": {"runs": [train.public_id], "keys": ["reward"]}},
                   {"kind": "grpo_health", "params": {"run": train.public_id}},
                   {"kind": "excerpt", "params": {"run": ids[1], "rollout": first.pk, "turns": "1-2"}}]
    return services.report_create(project=team.project, user=team.editor, title="GRPO results", blocks=blocks)


def _queries(client: Any, url: str) -> tuple[str, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        resp = client.get(url)
    assert resp.status_code == 200, resp.status_code
    return resp.content.decode(), [q["sql"] for q in ctx.captured_queries]


def _grow(seeded: dict[str, Any], three: list[Any]) -> None:
    """Much more data in every run the report shows."""
    late = {"model": "late", "rewards": [0.0] * 40, "turns": [30] * 40, "input": [1] * 40, "output": [1] * 40,
            "delegates": [True] * 40}
    for run in three:
        rollouts_ingest(run=run, rollouts=rollouts_for(late))
    metrics_ingest(run=seeded["train"], points=[{"step": 1000 + i, "values": {"reward": 0.01}} for i in range(300)])


def test_published_report_reads_frozen_data_only(client: Any, team: Any, seeded: dict[str, Any],
                                                  three: list[Any]) -> None:
    report = _report(team, seeded, three)
    services.report_publish(report=report, user=team.editor)
    _, token = share_create(project=team.project, user=team.editor, kind="report", target=report.public_id)
    client.force_login(team.viewer)
    url = f"/p/demo/reports/{report.public_id}/published/"
    before, queries = _queries(client, url)
    assert "0.785" in page_text(before)
    touched = [q for q in queries if RUN_DATA.search(q)]
    assert touched == [], touched  # frozen data is read, never recomputed
    # The runs grow a lot: the published page neither reads them nor asks more of the database.
    _grow(seeded, three)
    after, queries_after = _queries(client, url)
    assert len(queries_after) == len(queries)
    assert not any(RUN_DATA.search(q) for q in queries_after)
    assert "0.785" in page_text(after) and "0.393" not in page_text(after)
    # The same for a share link's logged-out reader.
    client.logout()
    shared, shared_queries = _queries(client, f"/s/{token}")
    assert "0.785" in page_text(shared)
    # (The link's own lookup joins the run a run-kind link names; for a report it names none.)
    touched = [q for q in shared_queries if RUN_DATA.search(q) and 'FROM "sharing_sharelink"' not in q]
    assert touched == [], touched


def test_draft_stamps_its_runs_once_and_recomputes_only_what_moved(client: Any, team: Any, seeded: dict[str, Any],
                                                                    three: list[Any]) -> None:
    small = _report(team, seeded, three)
    big = _report(team, seeded, three, repeat=3)  # three times the panels, over the same runs
    client.force_login(team.viewer)
    counts = []
    for report in (small, big):
        url = f"/p/demo/reports/{report.public_id}/"
        client.get(url)  # computes every panel once
        _, queries = _queries(client, url)
        stamps = [q for q in queries if "runs_rollout" in q]
        assert len(stamps) == 1, stamps  # one query stamps every panel's runs
        computed = [q for q in queries if PANEL_DATA.search(q)]
        assert computed == [], computed  # and no panel is computed again
        counts.append(len(queries))
    assert counts[0] == counts[1]  # reopening a draft costs the same, however many panels it has
    # New rollouts in one run: the draft shows them at once (its panels over that run are computed again).
    rollouts_ingest(run=three[1], rollouts=rollouts_for({"model": "late", "rewards": [0.0] * 6, "turns": [30] * 6,
                                                        "input": [1] * 6, "output": [1] * 6,
                                                        "delegates": [True] * 6}))
    draft, queries = _queries(client, f"/p/demo/reports/{small.public_id}/")
    assert "reward: avg - 0.393" in page_text(draft)
    assert any(re.search(r"\bruns_turn\b", q) for q in queries)  # the excerpt over that run was computed again


def test_a_draft_page_leaves_panels_it_has_not_computed_to_load_on_their_own(
        client: Any, team: Any, seeded: dict[str, Any], three: list[Any], settings: Any) -> None:
    """On a busy server (DEEPREPO_REPORT_INLINE_MS = 0) the draft's page computes nothing it does
    not hold: each such panel says "computing" and asks for itself; that request computes it, and
    the page shows it inline from then on."""
    settings.DEEPREPO_REPORT_INLINE_MS = 0
    report = _report(team, seeded, three)
    client.force_login(team.viewer)
    url = f"/p/demo/reports/{report.public_id}/"
    html, queries = _queries(client, url)
    pending = re.findall(r'hx-get="(/p/demo/reports/\w+/blocks/(\w+)/panel/)" hx-trigger="load"', html)
    assert len(pending) == 8 and "Computing this panel" in html
    assert not any(PANEL_DATA.search(q) for q in queries)  # nothing computed within the page
    assert "reward: avg - 0.785" not in page_text(html)
    panels = [client.get(u) for u, _ in pending]
    assert all(r.status_code == 200 for r in panels)
    raw = next(r.content.decode() for r in panels if "panel-raw_summary" in r.content.decode())
    assert "reward: avg - 0.785" in page_text(raw) and "hx-get" not in raw
    html = client.get(url).content.decode()
    assert "Computing this panel" not in html and "reward: avg - 0.785" in page_text(html)
    # The panel's URL is the project's: an outsider gets 404, a text block or a wrong uid too.
    text_uid = report.blocks.get(kind="text").uid
    assert client.get(f"/p/demo/reports/{report.public_id}/blocks/{text_uid}/panel/").status_code == 404
    assert client.get(f"/p/demo/reports/{report.public_id}/blocks/nope/panel/").status_code == 404
    client.force_login(team.outsider)
    assert client.get(pending[0][0]).status_code == 404


def test_a_published_version_is_rendered_once(client: Any, team: Any, seeded: dict[str, Any],
                                               three: list[Any]) -> None:
    """A published version never changes, so its rendered document is kept: a second reader gets the
    same HTML without the 20 panels' templates and charts being drawn again."""
    from deeprepo_web.reports.models import ReportVersion

    report = _report(team, seeded, three)
    version = services.report_publish(report=report, user=team.editor)
    client.force_login(team.viewer)
    url = f"/p/demo/reports/{report.public_id}/published/"
    first = client.get(url).content.decode()
    assert "reward: avg - 0.785" in page_text(first)
    # Were the page drawn again from the stored data, this (impossible) edit would show.
    frozen = {uid: {"error": "drawn again"} for uid in version.frozen}
    ReportVersion.objects.filter(pk=version.pk).update(frozen=frozen)
    again = client.get(url).content.decode()
    assert "drawn again" not in again and "reward: avg - 0.785" in page_text(again)
