"""What runs 0015 sets on the database (runs/dbsettings.py): every session opened after it runs without
Postgres's JIT compiler (docs/scale.md, "JIT": compiling cost a run's error signatures 1.6-1.9 s of a 2 s
query). A restore sets it again: tests/ops/test_backup_restore.py."""

from __future__ import annotations

import pytest

from deeprepo_web.runs.dbsettings import database_settings_apply
from tests.sessions import session


@pytest.mark.django_db
def test_a_new_session_runs_without_jit() -> None:
    with session(autocommit=True) as conn:
        assert conn.execute("SHOW jit").fetchone()[0] == "off"
        # and so a costly plan is not compiled: no "JIT" section in its EXPLAIN
        plan = conn.execute("EXPLAIN (FORMAT JSON) SELECT sum(g) FROM generate_series(1, 10000000) g "
                            "CROSS JOIN generate_series(1, 1) h").fetchone()[0]
        assert plan[0]["Plan"]["Total Cost"] > 100_000 and "JIT" not in plan[0]


@pytest.mark.django_db(transaction=True)
def test_a_role_that_does_not_own_the_database_is_warned_not_stopped() -> None:
    with session(autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS deeprepo_not_owner")
        conn.execute("CREATE ROLE deeprepo_not_owner")
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        try:
            conn.execute("SET ROLE deeprepo_not_owner")
            database_settings_apply(conn.cursor())  # no error: the migration (or a restore) goes on
            conn.execute("RESET ROLE")
        finally:
            conn.execute("RESET ROLE")
            conn.execute("DROP ROLE deeprepo_not_owner")
    assert any("JIT left on" in n for n in notices), notices
