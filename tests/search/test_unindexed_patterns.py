"""A regex or substring no index can narrow is refused unless a run or step window bounds it; what a
user typed is located by Postgres or RE2, never by Python's backtracking `re`."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from deeprepo_web.search.literals import regex_literal, substring_literal
from deeprepo_web.search.selectors import search_counts, search_page, search_scope
from deeprepo_web.search.snippets import pattern_for, snippet_html
from deeprepo_web.search.spec import spec_parse


@pytest.mark.parametrize(
    ("pattern", "run"),
    [
        ("...", 0), (".*", 0), ("e.*t", 1), ("[0-9]+", 0), ("(x+x+)+y", 1), ("ab?cd", 2), ("foo|b", 1),
        ("(?=abcd)x", 1), ("(?x)hello world", 0), ("abc", 3), ("abcd?", 3), ("ab+c", 2), ("foo|bar", 3),
        ("(foo)+", 3), ("(?:error).*timeout", 7), (r"bad id \d{5}", 3), ("job-[0-9]+/auth_h", 4),
        ("[]abc]def", 3), ("[[:alpha:]]xyz", 3), ("***=a.b.c", 1), ("(?i)Traceback", 9),
        # A two-letter word whose edge the literal shows gives pg_trgm " py" / "py ": enough.
        (r"db\.py:42", 3), (r"auth\.py:[0-9]+", 4), ("a.b", 1),
    ],
)
def test_the_letter_run_every_match_holds(pattern, run):
    assert regex_literal(pattern) == run


def test_substring_run_counts_letters_and_digits_only():
    assert substring_literal("job-4812/auth") == 4
    assert substring_literal("a.b.c.d") == 1
    assert substring_literal("db.py:42") == 3  # "db" and "py" with known edges
    assert substring_literal("ab") == 2
    assert spec_parse({"q": "db.py:42", "mode": "substring"}).q == "db.py:42"


def test_unindexable_regex_is_refused_with_a_clear_message_and_no_text_query(team, corpus):
    spec = spec_parse({"q": "e.*t", "mode": "regex"})
    assert spec.q == "" and any("no index can narrow it" in e for e in spec.errors)
    scope = search_scope(project=team.project, spec=spec)
    with CaptureQueriesContext(connection) as queries:
        assert search_page(scope=scope, spec=spec) == ([], False)
        assert search_counts(scope=scope, spec=spec) == {}
    assert not any("search_doc" in q["sql"] for q in queries.captured_queries)


def test_unindexable_substring_is_refused_too(team, corpus):
    spec = spec_parse({"q": "a.b", "mode": "substring"})
    assert spec.q == "" and any("this substring holds no run of 3" in e for e in spec.errors)


def test_the_search_page_says_why(client, team, corpus):
    client.force_login(team.viewer)
    res = client.get(reverse("search", args=["demo"]), {"q": "[0-9]+", "mode": "regex"})
    html = res.content.decode()
    assert res.status_code == 200
    assert "no index can narrow it" in html and "pick a run or a step range" in html


def test_the_api_reports_it_as_a_400(api, corpus):
    res = api.get("/projects/demo/search", q="[a-z]+", mode="regex")
    assert res.status_code == 400 and "no index can narrow it" in res.json()["error"]


def test_one_sided_step_range_is_not_a_bound(team, corpus):
    assert spec_parse({"q": "e.*t", "mode": "regex", "step_min": "1"}).q == ""


def test_scoped_unindexable_regex_walks_the_run_and_finds(team, corpus):
    spec = spec_parse({"q": r"b.d.i\w \d+|g.v. u", "mode": "regex", "run": corpus.run.public_id})
    assert not spec.errors and not spec.indexed
    scope = search_scope(project=team.project, spec=spec)
    results, _ = search_page(scope=scope, spec=spec)
    assert {r.rollout.pk for r in results} == {corpus.ids["answer"], corpus.ids["giveup"]}
    counts = search_counts(scope=scope, spec=spec)
    assert counts[corpus.run.pk][2] == (1, 2) and corpus.other_run.pk not in counts


def test_scoped_by_steps_finds_in_every_run(team, corpus):
    found = spec_parse({"q": "g.v. u", "mode": "regex", "step_min": "0", "step_max": "9"})
    assert not found.errors and not found.indexed
    scope = search_scope(project=team.project, spec=found)
    results, _ = search_page(scope=scope, spec=found)
    assert {r.rollout.pk for r in results} == {corpus.ids["giveup"], corpus.ids["second-giveup"]}


def test_highlights_come_from_re2_and_respect_whole_words():
    spec = spec_parse({"q": "need -sandbox give"})
    pattern = pattern_for(spec)
    assert type(pattern).__module__ == "deeprepo_web.search.snippets"
    html = str(snippet_html("a needle, need; give_up ÄNEED grÜNEED need", pattern))
    assert html.count("<mark>") == 3
    assert "<mark>need</mark>;" in html and "<mark>give</mark>_up" in html and "ÄNEED" in html


def test_substring_highlight_is_literal_and_case_blind():
    spec = spec_parse({"q": "(a+)+$ X", "mode": "substring", "run": "r"})
    html = str(snippet_html("left (A+)+$ x right", pattern_for(spec)))
    assert "<mark>(A+)+$ x</mark>" in html


def test_python_re_never_sees_a_users_pattern(team, corpus, monkeypatch):
    import re

    seen: list[str] = []
    real = re.compile

    def watch(pattern, flags=0):
        seen.append(pattern if isinstance(pattern, str) else "")
        return real(pattern, flags)

    monkeypatch.setattr(re, "compile", watch)
    for params in ({"q": "give up"}, {"q": "job-4812/auth", "mode": "substring"},
                   {"q": r"bad id \d{5}", "mode": "regex"}):
        spec = spec_parse(params)
        scope = search_scope(project=team.project, spec=spec)
        results, _ = search_page(scope=scope, spec=spec)
        assert results and all("<mark>" in str(r.snippets[0].html) for r in results)
    assert not [p for p in seen if "give" in p or "4812" in p or "bad id" in p]
