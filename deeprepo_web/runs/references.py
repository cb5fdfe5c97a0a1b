"""Tables that name a rollout (labels' marks, judge verdicts, share links) refer to it through two
statement-level triggers instead of a Postgres foreign key.

A foreign key checks each deleted rollout on its own, twice for NO ACTION (is the key back? is it still
referred to?), for every table that refers to rollouts: deleting a run of 2·10^5 rollouts spent 3.8 s in
those checks against 2.5 s for every DELETE statement of it. The triggers do the same work once per
statement, as joins, and that deletion took 2.5 s in all (docs/scale.md, "Deleting a run: the checks once
per statement"):

- `rollout_refs_delete` (AFTER DELETE ON runs_rollout, one trigger per referring table, the table as its
  argument): the rows that name a deleted rollout go with it — what the models' `on_delete=CASCADE`
  already says, so a rollout deleted by SQL (run_delete) and one deleted through the ORM end the same;
- `rollout_refs_check` (AFTER INSERT, and AFTER UPDATE, on the referring table): every row names a
  rollout that exists, or the statement fails with Postgres's foreign-key error (SQLSTATE 23503, an
  IntegrityError in Django). It locks those rollouts FOR KEY SHARE first, as a foreign key's check does,
  so a rollout deleted meanwhile either waits for this transaction (and its delete then takes the new
  row with it) or is seen gone.

The check is immediate, where Django's foreign keys are deferred to the commit: a row must be written
after its rollout, which every writer does. A rollout's id never changes, so no trigger watches it.
The models keep their ForeignKey with `db_constraint=False`; each app's migration calls
`rollout_reference(table)`. The functions themselves are created by runs 0022, from FUNCTIONS: a change
to them needs a migration of its own (CREATE OR REPLACE), or databases made before it keep the old ones.
"""

from __future__ import annotations

from django.db import migrations

FUNCTIONS = """
CREATE FUNCTION rollout_refs_delete() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('DELETE FROM %I t USING gone WHERE t.rollout_id = gone.id', TG_ARGV[0]);
  RETURN NULL;
END $f$;

CREATE FUNCTION rollout_refs_check() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE
  missing bigint;
BEGIN
  PERFORM 1 FROM runs_rollout r WHERE r.id IN (SELECT rollout_id FROM named) FOR KEY SHARE OF r;
  SELECT n.rollout_id INTO missing FROM named n
   WHERE n.rollout_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs_rollout r WHERE r.id = n.rollout_id)
   LIMIT 1;
  IF FOUND THEN
    RAISE foreign_key_violation USING
      MESSAGE = format('insert or update on table "%s" names a rollout that does not exist', TG_TABLE_NAME),
      DETAIL = format('Key (rollout_id)=(%s) is not present in table "runs_rollout".', missing);
  END IF;
  RETURN NULL;
END $f$;
"""
FUNCTIONS_DROP = "DROP FUNCTION rollout_refs_delete(); DROP FUNCTION rollout_refs_check();"


def rollout_reference(table: str) -> migrations.RunSQL:
    """The triggers by which `table`'s rollout_id refers to runs_rollout (its foreign key dropped before)."""
    return migrations.RunSQL(
        f"""
        CREATE TRIGGER {table}_rollout_gone AFTER DELETE ON runs_rollout REFERENCING OLD TABLE AS gone
          FOR EACH STATEMENT EXECUTE FUNCTION rollout_refs_delete('{table}');
        CREATE TRIGGER {table}_rollout_added AFTER INSERT ON {table} REFERENCING NEW TABLE AS named
          FOR EACH STATEMENT EXECUTE FUNCTION rollout_refs_check();
        CREATE TRIGGER {table}_rollout_changed AFTER UPDATE ON {table} REFERENCING NEW TABLE AS named
          FOR EACH STATEMENT EXECUTE FUNCTION rollout_refs_check();
        """,
        f"""
        DROP TRIGGER {table}_rollout_gone ON runs_rollout;
        DROP TRIGGER {table}_rollout_added ON {table};
        DROP TRIGGER {table}_rollout_changed ON {table};
        """,
    )
