"""A rollout's turns document becomes text instead of json (docs/scale.md, "The turns document as text").

Postgres checks every json value it is given: for an 8.7 kB document that is ~12 µs of the server's CPU
per rollout at ingest, the biggest single cost of its COPY, for text that only ingest writes (runs.ingest.pg.dumps,
which writes only valid JSON). Stored bytes are the same. The views over it (0020) read `doc::jsonb`
either way: they are dropped for the change and made again as they were.

Postgres has no binary cast from json to text, so ALTER TYPE rewrites the table under its lock:
measured 12-14 s for 10^6 rollouts (1.4 GB; docs/scale.md). The way back rewrites it again, checking every
document.
"""

import importlib

from django.db import migrations

import deeprepo_web.runs.models

# 0020's module name starts with a digit: imported by name, so the views are made exactly as 0020 made them.
VIEWS = importlib.import_module("deeprepo_web.runs.migrations.0020_turns_document").VIEWS


def _retype(schema_editor, new_type: str) -> None:
    with schema_editor.connection.cursor() as cur:
        # A change of type sets the column's compression back to the server's default (pglz), for the
        # rewrite too: lz4 is set again in the same statement where 0020 could set it (make run's embedded
        # Postgres has no lz4).
        cur.execute("SELECT attcompression FROM pg_attribute WHERE attrelid = 'runs_rolloutturns'::regclass "
                    "AND attname = 'doc'")
        lz4 = ", ALTER COLUMN doc SET COMPRESSION lz4" if cur.fetchone()[0] == "l" else ""
        cur.execute("DROP VIEW runs_toolcall, runs_turn")
        cur.execute(f"ALTER TABLE runs_rolloutturns ALTER COLUMN doc TYPE {new_type}{lz4}")
        cur.execute(VIEWS)


def to_text(apps, schema_editor):
    _retype(schema_editor, "text")


def to_json(apps, schema_editor):
    _retype(schema_editor, "json USING doc::json")


class Migration(migrations.Migration):
    dependencies = [("runs", "0022_rollout_reference_functions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(to_text, to_json)],
            state_operations=[
                migrations.AlterField(model_name="rolloutturns", name="doc",
                                      field=deeprepo_web.runs.models.JsonTextColumn()),
            ],
        ),
    ]
