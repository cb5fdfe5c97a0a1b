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
