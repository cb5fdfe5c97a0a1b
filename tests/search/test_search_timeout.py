"""A search Postgres gives up on (our statement timeout) says so, and only that says "took longer"."""

from __future__ import annotations

import pytest

from deeprepo_web.search.selectors import SearchFailed, _run

pytestmark = pytest.mark.django_db


def test_statement_timeout_reads_as_took_longer() -> None:
    with pytest.raises(SearchFailed) as caught:
        _run("SELECT pg_sleep(2)", [], 50)
    assert caught.value.timed_out
    assert str(caught.value).startswith("the search took longer than 0.05 s; narrow it")
    assert str(caught.value).endswith("or run it again: a first run reads from disk what a second finds in "
                                      "memory")


def test_a_refused_pattern_is_not_a_timeout() -> None:
    with pytest.raises(SearchFailed) as caught:
        _run("SELECT 'x' ~ %s", ["("], 5_000)
    assert not caught.value.timed_out
    assert str(caught.value).startswith("the database refused the search: invalid regular expression")


@pytest.mark.parametrize(("params", "advice"), [
    ({"q": "give up", "tool": "read_file"}, "Narrow it with a run, a step range, or the text without a filter."),
    ({"q": "give up", "tool": "read_file", "run": "RUN"}, "Narrow it with a step range, or the text without a filter."),
])
def test_a_common_text_that_the_filters_keep_none_of_says_so(team, corpus, monkeypatch, params, advice) -> None:
    from deeprepo_web.search import selectors
    from deeprepo_web.search.spec import spec_parse

    monkeypatch.setattr(selectors, "_walk", lambda spec, sure=False: True)  # a text in many rollouts
    # Both ways run out of time, as they do at 300,000 rollouts a run (docs/scale.md): Postgres cancels each.
    monkeypatch.setattr(selectors, "GUESS_MS", 1)
    monkeypatch.setattr(selectors, "PAGE_TIMEOUT_MS", 1)
    matches = selectors._matches_sql
    monkeypatch.setattr(selectors, "_matches_sql", lambda *a, **k: (
        f"SELECT x.id FROM pg_sleep(0.05), ({matches(*a, **k)[0]}) x(id)", matches(*a, **k)[1]))
    spec = spec_parse({k: corpus.run.public_id if v == "RUN" else v for k, v in params.items()})
    with pytest.raises(SearchFailed) as caught:
        selectors.search_page(scope=selectors.search_scope(project=team.project, spec=spec), spec=spec)
    assert caught.value.timed_out
    assert str(caught.value) == (f"'give up' is in many rollouts, and few or none of them pass the filters: checking "
                                 f"them took longer than 0.002 s. {advice}")

    unfiltered = spec_parse({"q": "give up"})  # no filter to blame: the general message
    with pytest.raises(SearchFailed) as caught:
        selectors.search_page(scope=selectors.search_scope(project=team.project, spec=unfiltered), spec=unfiltered)
    assert str(caught.value).startswith("the search took longer than 0.001 s; narrow it")
