"""The tables that grow with every rollout and metric point carry no index another of their indexes
already gives: a btree whose columns begin another's serves the same reads, and costs bytes and a write
per row (runs 0017 and labels 0002 dropped five; docs/scale.md, "Fewer index bytes"). Turns and tool
calls are one document per rollout in runs_rolloutturns (runs 0020), read through the views runs_turn
and runs_toolcall, which have no index."""

from __future__ import annotations

import pytest
from django.db import connection

GROWING = ("runs_rollout", "runs_rolloutturns", "runs_metric", "runs_metricrollup", "runs_example",
           "runs_blobref", "labels_mark", "search_doc")


def _btrees(table: str) -> dict[str, tuple[list[str], bool]]:
    """{index: (its columns with their sort options, unique)} for the table's plain btree indexes (no
    expression, no predicate: those answer other questions)."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.relname, i.indisunique, ARRAY(SELECT a.attname || ':' || o.opt "
            "  FROM unnest(i.indkey::int2[], i.indoption::int2[]) WITH ORDINALITY AS o(attnum, opt, k) "
            "  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = o.attnum ORDER BY o.k) "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
            "WHERE i.indrelid = %s::regclass AND am.amname = 'btree' AND i.indexprs IS NULL AND i.indpred IS NULL",
            [table])
        return {name: (list(columns), unique) for name, unique, columns in cur.fetchall()}


@pytest.mark.django_db
@pytest.mark.parametrize("table", GROWING)
def test_no_index_repeats_the_leading_columns_of_another(table: str) -> None:
    indexes = _btrees(table)
    assert indexes, f"{table} has no btree index: the query above lost its way"
    repeated = [(name, other) for name, (columns, unique) in indexes.items() if not unique
                for other, (longer, _) in indexes.items()
                if other != name and longer[: len(columns)] == columns]
    assert repeated == [], f"{table}: an index whose columns begin another's (drop it, or say why it stays)"


@pytest.mark.django_db
def test_the_check_finds_a_repeated_index() -> None:
    """The test above can fail: an index on the documents' rollout beside their primary key is found."""
    with connection.cursor() as cur:
        cur.execute("CREATE INDEX test_rolloutturns_rollout_again ON runs_rolloutturns (rollout_id)")
    indexes = _btrees("runs_rolloutturns")
    assert indexes["test_rolloutturns_rollout_again"] == (["rollout_id:0"], False)
    assert indexes["runs_rolloutturns_pkey"] == (["rollout_id:0"], True)
    with pytest.raises(AssertionError, match="begin another's"):
        test_no_index_repeats_the_leading_columns_of_another("runs_rolloutturns")


def _unindexed_foreign_keys() -> list[tuple[str, str, str]]:
    """(table, column, referenced table) of every foreign key whose first column leads no index of its table,
    and of every rollout_id kept by runs/references.py's triggers instead (their delete joins on it)."""
    with connection.cursor() as cur:
        cur.execute(
            "WITH refs AS ("
            "  SELECT c.conrelid AS rel, c.conkey[1] AS col, c.confrelid AS target FROM pg_constraint c"
            "  WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace"
            "  UNION SELECT t.tgrelid, a.attnum, 'runs_rollout'::regclass FROM pg_trigger t"
            "  JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attname = 'rollout_id'"
            "  WHERE t.tgfoid = 'rollout_refs_check'::regproc) "
            "SELECT r.rel::regclass::text, a.attname, r.target::regclass::text FROM refs r "
            "JOIN pg_attribute a ON a.attrelid = r.rel AND a.attnum = r.col "
            "WHERE NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = r.rel AND i.indkey[0] = r.col) "
            "ORDER BY 1, 2")
        return list(cur.fetchall())


@pytest.mark.django_db
def test_every_foreign_key_leads_an_index() -> None:
    """Deleting a row checks every foreign key that refers to it, and a deleted rollout's marks, verdicts and
    links are found by their rollout_id (runs/references.py): without an index leading with that column, each
    reads its whole table. judge_verdict's rollout had none (judge 0003): with 10,000 verdicts, deleting
    10,000 rollouts took 0.88 s of checks instead of 0.17 s, and it grows with both (docs/scale.md,
    "Deleting a run: its foreign-key checks")."""
    assert _unindexed_foreign_keys() == []


@pytest.mark.django_db
def test_the_check_finds_a_foreign_key_without_its_index() -> None:
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE test_refers (id bigint PRIMARY KEY, rollout_id bigint REFERENCES runs_rollout (id))")
    assert _unindexed_foreign_keys() == [("test_refers", "rollout_id", "runs_rollout")]


@pytest.mark.django_db
def test_the_check_finds_a_trigger_reference_without_its_index() -> None:
    with connection.cursor() as cur:
        cur.execute("CREATE TABLE test_names (id bigint PRIMARY KEY, rollout_id bigint)")
        cur.execute("CREATE TRIGGER test_names_rollout_added AFTER INSERT ON test_names REFERENCING NEW TABLE AS named "
                    "FOR EACH STATEMENT EXECUTE FUNCTION rollout_refs_check()")
    assert _unindexed_foreign_keys() == [("test_names", "rollout_id", "runs_rollout")]
