"""What a search page does not pay for as the data grows: a hit count the planner already answers,
a model per run of the project, rollouts per step of runs the chart does not show (docs/scale.md)."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from deeprepo_web.search import selectors
from deeprepo_web.search.selectors import search_counts, search_scope
from deeprepo_web.search.spec import spec_parse

from .conftest import _ingest, _turn, rec


def _counted(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "SELECT count(*) FROM (SELECT 1 FROM search_doc" in q["sql"]]


def _common_word_in_the_run(corpus, n: int) -> None:
    """`n` documents of the corpus's run, each holding "boilerplate", and statistics that know it."""
    with connection.cursor() as cur:
        cur.execute("INSERT INTO search_doc (src, obj, part, rollout_id, run_id, body) "
                    "SELECT 'rollout', 10000000 + g, 0, 10000000 + g, %s, 'boilerplate ' || g "
                    "FROM generate_series(1, %s) g", [corpus.run.pk, n])
        cur.execute("ANALYZE search_doc")


def _plan(sql: str, params: list, *, analyze: bool = False, plan: selectors.Plan = "bitmaps") -> str:
    """The plan of a search statement under the settings the search runs it with (selectors._run)."""
    explain = "EXPLAIN (ANALYZE, COSTS OFF)" if analyze else "EXPLAIN (COSTS OFF)"
    return "\n".join(row[0] for row in selectors._run(f"{explain} {sql}", params, 5_000, plan=plan))


def test_a_text_the_planner_calls_common_is_walked_without_counting_its_hits(team, corpus, monkeypatch):
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 100)
    _common_word_in_the_run(corpus, 400)
    with CaptureQueriesContext(connection) as common:
        assert selectors._walk(spec_parse({"q": "boilerplate"})) is True
    assert _counted(common) == []  # the estimate (~400) said enough: the count would have said the same
    with CaptureQueriesContext(connection) as rare:
        assert selectors._walk(spec_parse({"q": "give up"})) is False
    assert len(_counted(rare)) == 1  # a low estimate is only a guess: the index counts


def test_a_word_the_statistics_do_not_list_is_counted_not_walked(team, corpus, monkeypatch):
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1)
    _common_word_in_the_run(corpus, 400)  # statistics that list "boilerplate" and not "zebra"
    absent = spec_parse({"q": "zebra"})
    assert selectors._estimated_hits(absent) >= selectors.WALK_AFTER_HITS  # the planner's guess says "many"
    with CaptureQueriesContext(connection) as queries:
        assert selectors._walk(absent) is False  # so the index counts, and finds none: no walk of every rollout
    assert len(_counted(queries)) == 1
    with CaptureQueriesContext(connection) as queries:
        assert selectors._walk(spec_parse({"q": "boilerplate"})) is True
    assert _counted(queries) == []  # a listed word's estimate is a count: walked without counting


def test_a_substring_is_counted_whatever_the_planner_guesses(team, corpus, monkeypatch):
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1000)
    with connection.cursor() as cur:  # 400 short documents hold the text; 4,000 over 1 kB do not, and
        # ANALYZE leaves values over 1 kB out of the body's statistics: it sees only the short ones
        cur.execute("INSERT INTO search_doc (src, obj, part, rollout_id, run_id, body) "
                    "SELECT 'rollout', 10000000 + g, 0, 10000000 + g, %s, "
                    "CASE WHEN g <= 400 THEN 'cat /secret.key ' || g ELSE repeat('lorem ipsum ', 100) || g END "
                    "FROM generate_series(1, 4400) g", [corpus.run.pk])
        cur.execute("ANALYZE search_doc")
    spec = spec_parse({"q": "/secret.key", "mode": "substring"})
    assert selectors._estimated_hits(spec) >= selectors.WALK_AFTER_HITS  # the planner's guess says "many"
    with CaptureQueriesContext(connection) as queries:
        assert selectors._walk(spec) is False  # the index counts 400 (the walk would read 4,000 rollouts)
    assert len(_counted(queries)) == 1


def test_one_run_searched_by_its_filters_alone_is_counted_in_one_pass(team, corpus):
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="tools-run", environment="env")
    calls = [{"name": "read_file", "output": "ok"}]
    _ingest(run, [rec(f"ex-t{i}", uid=f"t{i}", step=i % 3, reward=i / 10,
                      turns=[_turn("look", calls=calls if i % 2 else [])]) for i in range(10)])
    spec = spec_parse({"run": run.public_id, "tool": "read_file", "reward_min": "0.2"})
    scope = search_scope(project=team.project, spec=spec)
    with CaptureQueriesContext(connection) as queries:
        counts = search_counts(scope=scope, spec=spec)
    rows = Rollout.objects.filter(run=run)
    expected = {step: (rows.filter(step=step, tools__contains=["read_file"], reward__gte=0.2).count(),
                       rows.filter(step=step).count()) for step in range(3)}
    assert counts == {run.pk: {s: v for s, v in expected.items() if v[0]}}
    assert counts[run.pk] == {0: (2, 4), 1: (1, 3), 2: (1, 3)}  # t3 + t9, t7, t5 (t1's reward is 0.1)
    counted = [q["sql"] for q in queries.captured_queries if "runs_rollout" in q["sql"] and "count(*)" in q["sql"]]
    assert len(counted) == 1 and "FILTER (WHERE" in counted[0]  # the run's rollouts read once


def test_the_page_loads_no_model_per_run_of_the_project(client, team, corpus):
    from deeprepo_web.runs.services import run_create

    for i in range(30):
        run_create(project=team.project, name=f"idle-{i:02}", environment="env")
    client.force_login(team.viewer)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(f"{reverse('search', args=['demo'])}?q=give+up").content.decode()
    assert f"/rollouts/{corpus.ids['giveup']}/" in html and "second-run" in html
    assert html.count('<option value="') - html.count('<option value="" ') >= 32  # every run is offered
    whole_runs = [q["sql"] for q in queries.captured_queries
                  if 'FROM "runs_run"' in q["sql"] and '"runs_run"."name"' in q["sql"]
                  and "LIMIT" not in q["sql"] and '"runs_run"."id" IN' not in q["sql"]]
    assert whole_runs == []  # names only of the results' runs, and of the 500 the run filter lists


def test_the_chart_counts_rollouts_per_step_in_the_runs_it_shows(client, team, corpus):
    from deeprepo_web.runs.services import run_create

    quiet, _ = run_create(project=team.project, name="quiet-run", environment="env")
    _ingest(quiet, [rec("ex-q", uid=f"quiet-{i}", step=i, turns=[_turn("Nothing to see.")]) for i in range(3)])
    spec = spec_parse({"q": "give up"})
    scope = search_scope(project=team.project, spec=spec)
    every = search_counts(scope=scope, spec=spec)
    assert every[quiet.pk] == {0: (0, 1), 1: (0, 1), 2: (0, 1)}  # the report panel's counts keep every run

    with CaptureQueriesContext(connection) as queries:
        shown = search_counts(scope=scope, spec=spec, top=50)
    assert shown == {k: v for k, v in every.items() if k != quiet.pk}
    totals = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT r.run_id, r.step, count(*) "
                                                                                "FROM runs_rollout r WHERE")]
    assert len(totals) == 1 and str(quiet.pk) not in totals[0].split("ANY(")[1].split(")")[0]
    # Two runs with one match each, and top=1: the tie keeps both (a chart breaks it by name).
    assert search_counts(scope=scope, spec=spec, top=1).keys() == {corpus.run.pk, corpus.other_run.pk}

    client.force_login(team.viewer)
    html = client.get(reverse("search_counts", args=["demo"]) + "?q=give+up").content.decode()
    assert "search-run" in html and "second-run" in html and "quiet-run" not in html


def test_a_text_in_too_many_rollouts_is_counted_in_one_run_only(client, team, corpus, monkeypatch):
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1)  # any text found counts as common
    client.force_login(team.viewer)
    url = reverse("search_counts", args=["demo"])
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url + "?q=give+up").content.decode()
    assert "In more than 1 rollouts: too many to count in every run" in html and "Choose a run" in html
    assert not [q for q in queries.captured_queries if q["sql"].startswith("SELECT r.run_id, r.step, count(*)")]
    html = client.get(url + f"?q=give+up&run={corpus.run.public_id}").content.decode()  # one run: counted
    assert "too many" not in html and f'data-run="{corpus.run.public_id}"' in html


def test_a_report_panel_of_a_text_in_too_many_rollouts_asks_for_a_run(team, corpus, monkeypatch):
    from deeprepo_web.reports.panels import panel_compute

    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1)  # any text found counts as common
    with CaptureQueriesContext(connection) as queries:
        data = panel_compute(team.project, "search_counts", {"q": "give up"})  # what the panel shows
    assert "'give up' is in more than 1 rollouts" in data["error"] and "choose a run" in data["error"]
    assert not [q for q in queries.captured_queries if q["sql"].startswith("SELECT r.run_id, r.step, count(*)")]
    data = panel_compute(team.project, "search_counts", {"q": "give up", "run": corpus.run.public_id})
    assert [(r["run"], r["matched"]) for r in data["runs"]] == [("search-run", 1)]  # one run: counted


def test_the_page_and_its_chart_decide_walk_or_count_once(client, team, corpus):
    client.force_login(team.viewer)
    query = "?q=sandbox+is&mode=substring"
    with CaptureQueriesContext(connection) as queries:
        html = client.get(reverse("search", args=["demo"]) + query).content.decode()
        chart = client.get(reverse("search_counts", args=["demo"]) + query).content.decode()
    assert f"/rollouts/{corpus.ids['second-giveup']}/" in html and "second-run" in chart
    assert len(_counted(queries)) == 1  # the chart's request reused the page's decision
    with CaptureQueriesContext(connection) as queries:  # another text: decided on its own
        client.get(reverse("search", args=["demo"]) + "?q=give+up&mode=substring")
    assert len(_counted(queries)) == 1


def test_a_count_that_ran_out_of_time_is_only_a_guess_for_the_chart(client, team, corpus, monkeypatch):
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 10**6)  # whatever the count finds is "few"
    with connection.cursor() as cur:  # enough documents holding the text that counting them takes > 1 ms
        cur.execute("INSERT INTO search_doc (src, obj, part, rollout_id, run_id, body) "
                    "SELECT 'rollout', 10000000 + g, 0, 10000000 + g, %s, 'the sandbox is down ' || g "
                    "FROM generate_series(1, 20000) g", [corpus.run.pk])
    spec = spec_parse({"q": "sandbox is", "mode": "substring"})
    query = "?q=sandbox+is&mode=substring"
    client.force_login(team.viewer)
    monkeypatch.setattr(selectors, "COUNT_MS", 1)  # Postgres cancels the count: the page walks on a guess
    html = client.get(reverse("search", args=["demo"]) + query).content.decode()
    assert f"/rollouts/{corpus.ids['second-giveup']}/" in html
    assert cache.get(selectors._walk_key(spec)) == (True, False)
    monkeypatch.setattr(selectors, "COUNT_MS", 150)
    with CaptureQueriesContext(connection) as queries:
        chart = client.get(reverse("search_counts", args=["demo"]) + query).content.decode()
    assert len(_counted(queries)) == 1  # not "too common" on a guess: counted, and found few
    assert "too many" not in chart and "second-run" in chart
    assert cache.get(selectors._walk_key(spec)) == (False, True)


def test_a_search_with_no_rollout_filter_keeps_the_runs_on_the_documents(team, corpus):
    spec = spec_parse({"q": "give up"})
    scope = search_scope(project=team.project, spec=spec)
    sql, _ = selectors._matches_sql(scope, spec)
    assert "FROM runs_rollout r" not in sql and "d.run_id + 0 = ANY" in sql  # no probe of runs_rollout per hit
    results, _ = selectors.search_page(scope=scope, spec=spec)
    found = {r.rollout.uid for r in results}
    assert found == {"giveup", "second-giveup"}  # not the other project's "I give up", whose run is not here
    filtered = spec_parse({"q": "give up", "step_min": "1"})  # a filter on the rollout: read per hit
    sql, _ = selectors._matches_sql(search_scope(project=team.project, spec=filtered), filtered)
    assert "FROM runs_rollout r WHERE r.id IN" in sql
    results, _ = selectors.search_page(scope=search_scope(project=team.project, spec=filtered), spec=filtered)
    assert [r.rollout.uid for r in results] == ["second-giveup"]


def test_words_whose_count_ran_out_of_time_take_the_index_not_the_walk(client, team, corpus, monkeypatch):
    with connection.cursor() as cur:  # documents of a run outside the project: counted (> 1 ms), not shown
        cur.execute("INSERT INTO search_doc (src, obj, part, rollout_id, run_id, body) "
                    "SELECT 'rollout', 10000000 + g, 0, 10000000 + g, 999999999, 'I give up ' || g "
                    "FROM generate_series(1, 20000) g")
    monkeypatch.setattr(selectors, "COUNT_MS", 1)  # Postgres cancels the count: a guess
    # ... always: a warm count of those 20,000 documents once finished inside the millisecond.
    counted = selectors.S.hits_capped
    monkeypatch.setattr(selectors.S, "hits_capped", lambda spec, cap: (
        f"SELECT n FROM pg_sleep(0.02), ({counted(spec, cap)[0]}) c(n)", counted(spec, cap)[1]))
    client.force_login(team.viewer)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(reverse("search", args=["demo"]) + "?q=give+up").content.decode()
    assert f"/rollouts/{corpus.ids['second-giveup']}/" in html
    sqls = [q["sql"] for q in queries.captured_queries]
    assert not [q for q in sqls if "CROSS JOIN LATERAL" in q]  # no walk through the newest rollouts
    assert cache.get(selectors._walk_key(spec_parse({"q": "give up"}))) == (False, False)
    with CaptureQueriesContext(connection) as queries:  # a substring's guess still walks
        client.get(reverse("search", args=["demo"]) + "?q=give+up&mode=substring")
    assert [q for q in queries.captured_queries if "CROSS JOIN LATERAL" in q["sql"]]


def test_the_index_way_finds_a_common_word_through_its_index_and_computes_no_tsvector(team, corpus, monkeypatch):
    """At 300,000 rollouts a run, the run's documents read one by one with each one's tsvector computed
    took over 20 s; the words index with exact bitmaps 0.4-0.8 s (docs/scale.md)."""
    _common_word_in_the_run(corpus, 2000)
    monkeypatch.setattr(selectors, "BIG_RUN", 1)  # the corpus's run counts as a big one
    spec = spec_parse({"q": "boilerplate", "run": corpus.run.public_id})
    scope = search_scope(project=team.project, spec=spec)
    assert not scope.one_small_run
    sql, params = selectors._matches_sql(scope, spec, ordered=False)
    # what the planner picks when it may: every body's tsvector
    assert "Seq Scan on search_doc" in _plan(sql, params, plan="")
    chosen = _plan(sql, params)
    assert "Bitmap Index Scan on search_doc_tsv" in chosen
    assert chosen.count("Bitmap Index Scan on search_doc_tsv") == 2  # the rollouts' documents, the prompts'
    assert "Seq Scan on search_doc" not in chosen and "search_doc_run" not in chosen and "search_doc_pkey" not in chosen
    settings = selectors._run("SELECT current_setting('enable_indexscan'), current_setting('enable_seqscan'), "
                              "current_setting('work_mem')", [], 5_000, plan="bitmaps")
    assert settings == [("off", "off", selectors.BITMAP_MEMORY)]
    assert selectors._run("SELECT current_setting('enable_seqscan')", [], 5_000) == [("on",)]  # a walk keeps them


def test_a_big_run_and_a_small_one_find_and_count_the_same(team, corpus, monkeypatch):
    from deeprepo_web.runs.models import Rollout

    spec = spec_parse({"q": "give up", "run": corpus.run.public_id})
    filtered = spec_parse({"q": "give up", "run": corpus.run.public_id, "step_min": "0"})
    answers = []
    for big_run in (10**9, 1):
        monkeypatch.setattr(selectors, "BIG_RUN", big_run)
        cache.clear()
        found = []
        for s in (spec, filtered):
            scope = search_scope(project=team.project, spec=s)
            assert scope.one_small_run is (big_run > 1)
            results, _ = selectors.search_page(scope=scope, spec=s)
            found.append(([r.rollout.pk for r in results], search_counts(scope=scope, spec=s)))
        answers.append(found)
    assert answers[0] == answers[1]
    giveup = Rollout.objects.get(pk=corpus.ids["giveup"])
    assert answers[0][0][0] == [giveup.pk]
    assert answers[0][0][1][corpus.run.pk][giveup.step][0] == 1


def test_the_chart_of_a_common_word_in_a_big_run_asks_its_index_with_bitmaps(team, corpus, monkeypatch):
    _common_word_in_the_run(corpus, 2000)
    monkeypatch.setattr(selectors, "BIG_RUN", 1)
    asked = []
    real_run = selectors._run
    monkeypatch.setattr(selectors, "_run", lambda sql, params, timeout_ms, **kw: (
        asked.append((sql, kw.get("plan", ""))), real_run(sql, params, timeout_ms, **kw))[1])
    spec = spec_parse({"q": "boilerplate", "run": corpus.run.public_id})
    search_counts(scope=search_scope(project=team.project, spec=spec), spec=spec)
    matched = [plan for sql, plan in asked if "search_doc d" in sql and "GROUP BY 1, 2" in sql]
    assert matched == ["bitmaps"]


def test_a_rare_word_in_one_small_run_is_found_through_its_index_not_by_testing_the_runs_documents(team, corpus):
    """The planner read the run's documents through search_doc_run and computed each one's tsvector: a rare
    word in a run of 3,000 rollouts of 8 kB took 3.3 s for the list and 3.3 s again for its chart; through
    the words index, 9 and 3 ms (docs/scale.md)."""
    with connection.cursor() as cur:
        # Statistics from before the run's 2,000 other documents (none holding the words) came, as for a live
        # run logging since autovacuum's last ANALYZE: the planner thinks the run's documents few.
        cur.execute("ANALYZE search_doc")
        cur.execute("INSERT INTO search_doc (src, obj, part, rollout_id, run_id, body) "
                    "SELECT 'rollout', 10000000 + g, 0, 10000000 + g, %s, repeat('lorem ipsum ', 50) || g "
                    "FROM generate_series(1, 2000) g", [corpus.run.pk])
    spec = spec_parse({"q": "give up", "run": corpus.run.public_id})
    scope = search_scope(project=team.project, spec=spec)
    assert scope.one_small_run and not selectors._walk(spec)
    sql, params = selectors._matches_sql(scope, spec, ordered=False)
    plan = _plan(sql, params, analyze=True)
    assert "Bitmap Index Scan on search_doc_tsv" in plan and "search_doc_run" not in plan
    tested = sum(int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan))
    assert tested < 100  # the run's documents were not tested one by one
    results, _ = selectors.search_page(scope=scope, spec=spec)
    assert [r.rollout.uid for r in results] == ["giveup"]
    counts = search_counts(scope=scope, spec=spec)
    assert sum(hits for steps in counts.values() for hits, _ in steps.values()) == 1


def test_a_common_text_in_one_small_run_reads_the_run_and_its_examples_only(team, corpus, monkeypatch):
    """A common text in one run: the run's documents, each tested for the words as substrings before its
    tsvector, and the prompts of the run's examples, not every prompt the trigram index holds the text in
    (1.6 s for the chart of `db.py:42` in a run of 3,000 rollouts at 10^5, 0.26 s this way)."""
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 0)  # every text counts as common
    for q, mode in (("give up", "words"), ("give up", "substring")):
        spec = spec_parse({"q": q, "mode": mode, "run": corpus.run.public_id})
        scope = search_scope(project=team.project, spec=spec)
        assert selectors._doc_runs(scope, spec, "filter") == "index"
        sql, params = selectors._matches_sql(scope, spec, ordered=False)
        assert ("ILIKE ALL" in sql) is (mode == "words")
        # The run's own documents (its index usable), the prompts of its examples: no document is kept by a
        # test of its run or example after the text's index found it in the whole table.
        assert "d.run_id = ANY" in sql and "d.run_id + 0" not in sql and "d.obj + 0" not in sql
        assert "SELECT DISTINCT x.example_id FROM runs_rollout x" in sql
        assert "search_doc_pkey" in _plan(sql, params)  # each example's prompt read by its key


@pytest.mark.parametrize("query", [
    {"q": "give up"}, {"q": "give up", "mode": "substring"}, {"q": "g[io]ve up", "mode": "regex"},
    {"q": "flaky scheduler"}, {"q": "flaky", "field": "prompt"}, {"q": "give up", "field": "content"},
    {"q": "FileNotFoundError", "field": "tool_error"}, {"q": "give up", "step_min": "0"},
])
def test_one_small_run_finds_and_counts_the_same_whether_its_text_is_common_or_rare(team, corpus, monkeypatch, query):
    answers = []
    for walk_after in (10**9, 0):  # rare: the text's index, the run tested on each document; common: the run's
        monkeypatch.setattr(selectors, "WALK_AFTER_HITS", walk_after)
        cache.clear()
        spec = spec_parse({**query, "run": corpus.run.public_id})
        scope = search_scope(project=team.project, spec=spec)
        assert selectors._doc_runs(scope, spec, "") == ("index" if walk_after == 0 else "")
        answers.append((sorted(selectors.search_rollout_ids(scope=scope, spec=spec)), search_counts(scope=scope, spec=spec)))
    assert answers[0] == answers[1]
    assert answers[0][0]  # each query finds something in the run
