"""Settings the app gives its database, not a session: `ALTER DATABASE <current> SET …`, so every session
opened later has them — web, workers, beat, a streaming replica (it replays the catalog), and sessions
through PgBouncer (which drops the `options` a connection string could carry). Set by runs 0015, and
again by a restore (`ops.backup`): pg_restore into a new database does not carry database settings.

- `jit = off`: Postgres compiles a statement to machine code once its estimated cost passes
  `jit_above_cost` (100,000), and estimates grow with the tables. At 300,000 rollouts a run's error
  signatures spent 1.6-1.9 s compiling a query that runs in 0.3-0.4 s (docs/scale.md, "JIT"); our
  statements are bounded (seconds at most), where compiling costs more than it saves.

A role that does not own the database cannot change its settings: it gets a warning, and an administrator
can run `ALTER DATABASE … SET jit = off` (or set it in postgresql.conf).
"""

from __future__ import annotations

from typing import Any

SET = """
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET jit = off', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'JIT left on: only the owner of database % can turn it off (ALTER DATABASE … SET jit = off)',
        current_database();
END $$
"""

RESET = """
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I RESET jit', current_database());
EXCEPTION WHEN insufficient_privilege THEN
    NULL;
END $$
"""


def database_settings_apply(cursor: Any) -> None:
    """Give the current database its settings (for sessions opened after this one)."""
    cursor.execute(SET)
