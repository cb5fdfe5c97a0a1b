"""Postgres's JIT compiler off for this database (every new session of the web app, the workers and a
streaming replica, which replays the setting; PgBouncer passes it on, unlike a connection option).

Postgres compiles a query to machine code once its estimated cost passes `jit_above_cost` (100,000 by
default), and estimates grow with the tables: at 300,000 rollouts a run's error signatures spent 1.6-1.9 s
compiling a query that runs in 0.3-0.4 s (docs/scale.md, "JIT"). Our statements are bounded (at most 20 s,
most under a second), where compiling costs more than it saves.

A role that does not own the database cannot change its settings: the migration then warns and goes on
(an administrator can run `ALTER DATABASE … SET jit = off`, or set `jit = off` in postgresql.conf).
"""

from django.db import migrations

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


class Migration(migrations.Migration):
    dependencies = [("runs", "0014_rollout_error_sig")]

    # The database's setting reaches sessions opened after it; SET gives it to this one too.
    operations = [migrations.RunSQL([SET, "SET jit = off"], [RESET, "RESET jit"])]
