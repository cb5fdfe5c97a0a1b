"""The chart of a common text in one big run, drawn from a sample of its rollouts (search_sample): what it
tests, what it estimates, and what the page and a report panel say of it. The sizes are scaled down here
(a run of 600 rollouts stands for one of 10^6; docs/scale.md, "A common text in a big run")."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from deeprepo_web.reports.panels import KINDS, panel_compute
from deeprepo_web.search import selectors
from deeprepo_web.search.selectors import (
    search_chart,
    search_counts,
    search_rollout_ids,
    search_sample,
    search_scope,
)
from deeprepo_web.search.spec import spec_parse

from .conftest import _ingest, _turn, rec

STEPS = 6
PER_STEP = 100


@pytest.fixture
def big_run(team, monkeypatch):
    """A run of 600 rollouts over 6 steps: "retrying the flaky request" in every rollout of steps 0-2 and in
    one of ten of steps 3-5; half of each step's rollouts call `read_file`. Big, and the text common, at
    these sizes."""
    from deeprepo_web.runs.services import run_create

    monkeypatch.setattr(selectors, "BIG_RUN", 50)
    monkeypatch.setattr(selectors, "SAMPLE_RUN", 500)
    monkeypatch.setattr(selectors, "CHART_SAMPLE", 200)
    monkeypatch.setattr(selectors, "SAMPLE_MIN_HITS", 10)
    monkeypatch.setattr(selectors, "FEW_KEPT", 150)
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 100)
    run, _ = run_create(project=team.project, name="long-run", environment="env")
    records = []
    for i in range(STEPS * PER_STEP):
        step = i // PER_STEP
        said = "retrying the flaky request" if step < 3 or i % 10 == 0 else "all green"
        calls = [{"name": "read_file", "output": "ok"}] if i % 2 else []
        records.append(rec(f"ex-{i % 16}", uid=f"r{i}", step=step, turns=[_turn(said, calls=calls)]))
    _ingest(run, records)
    return run


def _chart(team, spec):
    return search_chart(scope=search_scope(project=team.project, spec=spec), spec=spec)


def _sample(team, params):
    spec = spec_parse(params)
    return search_sample(scope=search_scope(project=team.project, spec=spec), spec=spec), spec


def test_a_common_text_in_a_big_run_is_charted_from_a_sample(team, big_run):
    sample, spec = _sample(team, {"q": "flaky request", "run": big_run.public_id})
    assert sample is not None and sample.rollouts == STEPS * PER_STEP
    steps = sample.counts[big_run.pk]
    assert 100 < sample.tested < 300  # about one rollout of three (600 // 200), picked by a hash of its id
    assert sum(n for _, n in steps.values()) == sample.tested and set(steps) == set(range(STEPS))
    for step, (hits, n) in steps.items():
        share = hits / n
        assert (share == 1.0) if step < 3 else (share < 0.4)  # every tested rollout of 0-2 matches; few of 3-5
    exact = search_counts(scope=search_scope(project=team.project, spec=spec), spec=spec)[big_run.pk]
    matched = sum(m for m, _ in exact.values())
    assert matched == 330 and 0.75 * matched < sample.estimated < 1.25 * matched
    assert _sample(team, {"q": "flaky request", "run": big_run.public_id})[0] == sample  # the same chart again


def test_the_sample_applies_the_filters_and_counts_every_tested_rollout(team, big_run):
    sample, _ = _sample(team, {"q": "flaky request", "tool": "read_file", "run": big_run.public_id})
    assert sample is not None
    unfiltered, _ = _sample(team, {"q": "flaky request", "run": big_run.public_id})
    assert sample.tested == unfiltered.tested  # the rollouts the filter drops count in each step's total
    for step, (hits, n) in sample.counts[big_run.pk].items():
        assert hits < n if step < 3 else hits <= unfiltered.counts[big_run.pk][step][0]
    assert 0.3 < sample.hits / unfiltered.hits < 0.7  # half the rollouts call read_file


def test_exact_counts_where_a_sample_would_not_do(team, big_run, corpus, monkeypatch):
    run = big_run.public_id
    assert _sample(team, {"q": "flaky request", "run": corpus.run.public_id})[0] is None  # a small run
    assert _sample(team, {"q": "flaky request"})[0] is None  # every run: counted per run, or too common
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1000)
    assert _sample(team, {"q": "flaky request", "run": run})[0] is None  # a rare text: its index counts it
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 100)
    monkeypatch.setattr(selectors, "SAMPLE_MIN_HITS", 1000)
    sample, spec = _sample(team, {"q": "flaky request", "run": run})
    assert sample is not None and not sample.drawn  # too few hits to draw them: the chart counts them all
    assert _chart(team, spec) == (search_counts(scope=search_scope(project=team.project, spec=spec), spec=spec), None)
    monkeypatch.setattr(selectors, "SAMPLE_MIN_HITS", 10)
    monkeypatch.setattr(selectors, "SAMPLE_RUN", 601)
    assert _sample(team, {"q": "flaky request", "run": run})[0] is None  # under SAMPLE_RUN rollouts


@pytest.mark.parametrize("filters, kept", [({"tool": "run_code"}, 0), ({"step_min": "5"}, 100)])
def test_a_common_text_that_the_filters_make_rare_is_counted_in_the_rollouts_they_keep(team, big_run, filters, kept):
    """No tool call of the run is `run_code`, and step 5 holds 10 of the text's 330 rollouts: the sample has
    too few hits to draw, and says that the filters keep few rollouts. Those are tested alone, as the sample
    tests its own; the index way would collect every document of the common text first (10 s at 10^6)."""
    sample, spec = _sample(team, {"q": "flaky request", "run": big_run.public_id, **filters})
    assert sample is not None and not sample.drawn and sample.kept <= kept / 2
    exact = search_counts(scope=search_scope(project=team.project, spec=spec), spec=spec)
    assert sum(m for m, _ in exact[big_run.pk].values()) == kept // 10
    with CaptureQueriesContext(connection) as asked:
        assert _chart(team, spec) == (exact, None)  # every step, with its rollouts, as search_counts gives them
    assert not any("JOIN runs_rollout r ON r.id = x.id" in q["sql"] for q in asked.captured_queries)


def test_a_common_text_under_filters_in_one_run_joins_its_hits_by_hashes(team, big_run, corpus):
    """Half the run calls read_file, so the filter keeps too many for a filters-first count. The planner guesses
    the text's hits at a small share of what they are and looked each one's rollout up (236,170 lookups, 1.5 s
    at 250,000 rollouts a run); hashing the run's kept rollouts finds the same (docs/scale.md)."""
    params = {"q": "flaky request", "tool": "read_file", "run": big_run.public_id}
    spec = spec_parse(params)
    scope = search_scope(project=team.project, spec=spec)
    assert selectors._plan(scope, spec, walk=False) == "hashed"
    for other in ({**params, "tool": ""}, {**params, "run": ""}):  # no filter, or every run: looked up as before
        other_spec = spec_parse(other)
        assert selectors._plan(search_scope(project=team.project, spec=other_spec), other_spec, walk=False) == "bitmaps"
    assert selectors._plan(scope, spec, walk=True) == ""  # the walk joins nothing
    sql, sql_params = selectors._matches_sql(scope, spec, walk=False)
    explained = "\n".join(row[0] for row in selectors._run(f"EXPLAIN (COSTS OFF) {sql}", sql_params, 5_000,
                                                           plan="hashed"))
    assert "Hash Join" in explained and "Nested Loop" not in explained
    found = {plan: selectors._run(sql, sql_params, 5_000, plan=plan) for plan in ("hashed", "bitmaps")}
    assert found["hashed"] == found["bitmaps"] and len(found["hashed"]) == 150  # the odd rollouts of steps 0-2
    with CaptureQueriesContext(connection) as asked:
        counts = search_counts(scope=scope, spec=spec)[big_run.pk]
    assert counts == {step: (50 if step < 3 else 0, PER_STEP) for step in range(STEPS)}
    assert any("enable_nestloop = off" in q["sql"] for q in asked.captured_queries)
    assert selectors._run("SELECT current_setting('enable_nestloop')", [], 5_000) == [("on",)]  # put back
    with CaptureQueriesContext(connection) as asked:  # the ids a bulk label or an export takes: the same join
        ids = list(search_rollout_ids(scope=scope, spec=spec))
    assert ids == [row[0] for row in found["hashed"]]
    assert any("enable_nestloop = off" in q["sql"] for q in asked.captured_queries)


def test_the_chart_says_it_is_an_estimate(client, team, big_run, monkeypatch):
    client.force_login(team.viewer)
    url = reverse("search_counts", args=["demo"])
    html = client.get(f"{url}?q=flaky+request&run={big_run.public_id}").content.decode()
    assert "Estimated from a sample:" in html and "of the run’s 600 rollouts tested" in html
    assert "≈ " in html.split('class="num sc-matched">')[1][:20]
    assert "sampled rollouts (100%)" in html  # a bar of steps 0-2: every tested rollout matches
    bars = html.count("<rect")
    assert 1 <= bars <= 5  # at least 40 tested rollouts a bar: ~200 tested give 5 bars or fewer
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1000)  # the same text, rare: counted exactly
    exact = client.get(f"{url}?q=flaky+request&run={big_run.public_id}").content.decode()
    assert "Estimated" not in exact and "≈" not in exact and '<td class="num sc-matched">330</td>' in exact


def test_a_report_panel_of_a_big_run_says_so(team, big_run):
    data = panel_compute(team.project, "search_counts", {"q": "flaky request", "run": big_run.public_id})
    (row,) = data["runs"]
    assert row["total"] == 600 and 100 < row["tested"] < 300 and 0.75 * 330 < row["matched"] < 1.25 * 330
    assert f"≈ {row['matched']}" in KINDS["search_counts"].markdown({}, data)
