"""What a search finds, field by field and mode by mode, through the real SQL and indexes."""

from __future__ import annotations

import pytest

from deeprepo_web.search.selectors import SearchFailed, search_counts, search_page, search_scope
from deeprepo_web.search.spec import spec_parse


def _find(team, corpus, **params) -> dict[str, object]:
    spec = spec_parse(params)
    scope = search_scope(project=team.project, spec=spec)
    results, _ = search_page(scope=scope, spec=spec)
    by_id = {v: k for k, v in corpus.ids.items()}
    return {by_id[r.rollout.pk]: r for r in results}


@pytest.mark.parametrize(
    ("params", "uids", "turn"),
    [
        ({"q": "give up"}, {"giveup", "second-giveup"}, 2),
        ({"q": '"give up on this"'}, {"giveup"}, 2),
        ({"q": "give -sandbox"}, {"giveup"}, 2),
        ({"q": "read_file", "in": "tool_name"}, {"toolerr"}, 1),
        ({"q": "test_auth", "in": "tool_args"}, {"toolerr"}, 1),
        ({"q": "FileNotFoundError", "in": "tool_error"}, {"toolerr"}, 1),
        ({"q": "edit the test file", "in": "reasoning"}, {"hack"}, 1),
        ({"q": "bypassed", "in": "answer"}, {"answer"}, None),
        ({"q": "ValueError", "in": "error"}, {"answer"}, None),
        ({"q": "flaky scheduler", "in": "prompt"}, {"prompt"}, None),
        ({"q": "flaky scheduler"}, {"prompt"}, None),
        ({"q": "job-4812/auth", "mode": "substring"}, {"toolerr"}, 1),
        # Words inside HTML: Postgres's parser alone would read <script> as a tag and skip what follows.
        ({"q": "pwned onerror"}, {"html"}, 1),
        ({"q": "tests/test_auth.py"}, {"toolerr"}, 1),
        ({"q": "GIVE UP ON", "mode": "substring"}, {"giveup"}, 2),
        ({"q": r"bad id \d{5}", "mode": "regex"}, {"answer"}, None),
        ({"q": r"job-[0-9]+/auth_h", "mode": "regex", "in": "tool_output"}, {"toolerr"}, 1),
    ],
)
def test_search_finds_the_field_and_turn(team, corpus, params, uids, turn):
    found = _find(team, corpus, **params)
    assert set(found) == uids
    first = sorted(uids)[0]
    assert found[first].turn_index == turn


def test_field_restriction_excludes_other_fields(team, corpus):
    assert _find(team, corpus, q="test file", **{"in": "content"}) == {}
    assert _find(team, corpus, q="read_file", **{"in": "content"}) == {}


def test_other_projects_never_match(team, corpus):
    found = _find(team, corpus, q="other project")
    assert found == {}
    assert "outsider-giveup" not in _find(team, corpus, q="give up")


@pytest.mark.parametrize(
    ("params", "uids"),
    [
        ({"step_min": "1", "step_max": "2"}, {"toolerr", "hack", "answer"}),
        ({"reward_min": "0.5"}, {"hack", "answer", "prompt"}),
        ({"reward_max": "0"}, {"giveup", "html", "second-giveup"}),
        ({"tool": "read_file"}, {"toolerr"}),
        ({"stop": "gave_up"}, {"giveup"}),
    ],
)
def test_filters_narrow_a_search(team, corpus, params, uids):
    # "." in a regex matches every text: the filters alone decide. It has no letters for the trigram
    # index, so a step window (every step here) is what lets it run: it walks the rollouts in it.
    window = {"step_min": "0", "step_max": "100", **params}
    assert set(_find(team, corpus, q="...", mode="regex", **window)) == uids


def test_run_filter(team, corpus):
    assert set(_find(team, corpus, q="give up", run=corpus.other_run.public_id)) == {"second-giveup"}


def test_snippet_marks_the_match_and_escapes_the_rest(team, corpus):
    found = _find(team, corpus, q="needle")
    html = str(found["html"].snippets[0].html)
    assert "<mark>needle</mark>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and "&lt;img" in html


def test_bad_regex_is_one_clear_error(team, corpus):
    spec = spec_parse({"q": "abc(", "mode": "regex"})
    scope = search_scope(project=team.project, spec=spec)
    with pytest.raises(SearchFailed, match="regular expression"):
        search_page(scope=scope, spec=spec)


def test_short_substring_is_refused_and_others_kept(team, corpus):
    spec = spec_parse({"q": "ab", "mode": "substring", "step_min": "x"})
    assert any("at least 3 characters" in e for e in spec.errors)
    assert any("step_min" in e for e in spec.errors)


def test_counts_per_run_and_step(team, corpus):
    spec = spec_parse({"q": "give up"})
    counts = search_counts(scope=search_scope(project=team.project, spec=spec), spec=spec)
    assert counts[corpus.run.pk][0] == (1, 1)
    assert counts[corpus.run.pk][2] == (0, 2)
    assert counts[corpus.other_run.pk][5] == (1, 1)


def test_new_rollouts_are_searchable_after_the_index_pass(team, corpus):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Doc

    from .conftest import _turn, rec

    rollouts_ingest(run=corpus.run, rollouts=[rec("ex-new", uid="late", step=9, turns=[_turn("kumquat here")])])
    assert _find(team, corpus, q="kumquat") == {}  # ingest did not wait for the index
    assert search_index_update() == 2  # the rollout (its turn and answer), its (empty) prompt
    late_id = corpus.ids["late"] = corpus.run.rollouts.get(uid="late").pk
    assert list(_find(team, corpus, q="kumquat")) == ["late"]
    assert search_index_update() == 0  # nothing twice
    # A row whose transaction committed after a later one was indexed is caught by the slack re-read.
    Doc.objects.filter(src="rollout", obj=late_id).delete()
    assert search_index_update() == 1


@pytest.mark.parametrize("params", [
    {"q": "give up"}, {"q": "flaky scheduler"}, {"q": "read_file", "in": "tool_name"},
    {"q": "bad id", "mode": "substring"}, {"q": r"job-[0-9]+", "mode": "regex"}, {"q": "pwned", "step_min": "3"},
    # the walk tests every word as a substring before the tsvector: any case, phrases, or, -word
    {"q": "valueerror BYPASSED"}, {"q": '"give up"'}, {"q": "sandbox or pwned"}, {"q": "give -sandbox"},
])
def test_walking_the_rollouts_finds_what_the_indexes_find(team, corpus, monkeypatch, params):
    from deeprepo_web.search import selectors

    by_index = {k: (r.hits, r.turn_index) for k, r in _find(team, corpus, **params).items()}
    monkeypatch.setattr(selectors, "WALK_AFTER_HITS", 1)  # every search counts as common: walk
    walked = {k: (r.hits, r.turn_index) for k, r in _find(team, corpus, **params).items()}
    assert walked == by_index and by_index


@pytest.mark.parametrize(("params", "index"), [
    ({"q": "give up"}, "search_doc_tsv"),
    ({"q": "job-4812", "mode": "substring"}, "search_doc_trgm"),
    ({"q": "job-[0-9]+", "mode": "regex"}, "search_doc_trgm"),
])
def test_searches_can_use_their_index(team, corpus, params, index):
    from deeprepo_web.search import sql as S
    from tests.plans import plan

    match, match_params = S.doc_match(spec_parse(params))
    assert index in plan(f"SELECT d.obj FROM search_doc d WHERE {match}", match_params)


def test_an_index_pass_out_of_time_keeps_its_watermark(team, corpus):
    from deeprepo_web.search.indexer import search_index_update
    from deeprepo_web.search.models import Watermark

    before = dict(Watermark.objects.values_list("src", "last_id"))
    assert before["rollout"] > 0
    search_index_update(budget_seconds=0)  # no time for any window
    assert dict(Watermark.objects.values_list("src", "last_id")) == before


def test_regex_snippet_is_located_by_postgres(team, corpus):
    found = _find(team, corpus, q=r"bad id \d{5}", mode="regex")
    assert "<mark>bad id 99812</mark>" in str(found["answer"].snippets[0].html)


def test_a_backtracking_regex_never_runs_in_python(team, corpus):
    import time

    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.search.indexer import search_index_update

    from .conftest import _turn, rec

    rollouts_ingest(run=corpus.run, rollouts=[rec("ex-x", uid="xs", turns=[_turn("x" * 40 + " then xxy")])])
    search_index_update()
    corpus.ids["xs"] = corpus.run.rollouts.get(uid="xs").pk
    t0 = time.monotonic()
    # 2^40 steps for a backtracking engine; no 3-letter run for the index, so scoped to the run.
    found = _find(team, corpus, q="(x+x+)+y", mode="regex", run=corpus.run.public_id)
    assert time.monotonic() - t0 < 5
    assert "xs" in found and "<mark>" in str(found["xs"].snippets[0].html)


def test_a_wrong_guess_runs_out_of_time_and_the_other_way_answers(team, corpus, monkeypatch):
    from deeprepo_web.search import selectors

    real_run = selectors._run
    guesses = []

    def guess_too_slow(sql, params, timeout_ms, **kw):
        if timeout_ms == selectors.GUESS_MS:
            guesses.append(sql)
            return real_run("SELECT pg_sleep(1)", [], 200)
        return real_run(sql, params, timeout_ms, **kw)

    monkeypatch.setattr(selectors, "_run", guess_too_slow)
    assert set(_find(team, corpus, q="give up")) == {"giveup", "second-giveup"}
    assert len(guesses) == 1


def test_a_count_out_of_time_walks_a_substring_and_trusts_the_planner_for_words(team, corpus, monkeypatch):
    from deeprepo_web.search import selectors

    real_run = selectors._run

    def slow_count(sql, params, timeout_ms, **kw):
        if timeout_ms == selectors.COUNT_MS:
            return real_run("SELECT pg_sleep(1)", [], timeout_ms)
        return real_run(sql, params, timeout_ms, **kw)

    monkeypatch.setattr(selectors, "_run", slow_count)
    assert selectors._walk(spec_parse({"q": "give up", "mode": "substring"})) is True
    assert selectors._walk(spec_parse({"q": "give up"})) is False  # words the planner did not call many
    assert set(_find(team, corpus, q="job-4812", mode="substring")) == {"toolerr"}
