"""A rollout's turns document becomes text instead of json (docs/scale.md, "The turns document as text").

Postgres checks every json value it is given: for an 8.7 kB document that is ~12 µs of the server's CPU
per rollout at ingest, the biggest single cost of its COPY, for text that only ingest writes (orjson,
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
DROP_VIEWS = "DROP VIEW runs_toolcall, runs_turn;"
# A change of type sets the column's compression back to the server's default (pglz), for the rewrite too.
LZ4 = "ALTER COLUMN doc SET COMPRESSION lz4"


class Migration(migrations.Migration):
    dependencies = [("runs", "0022_rollout_reference_functions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    DROP_VIEWS + f"ALTER TABLE runs_rolloutturns ALTER COLUMN doc TYPE text, {LZ4};" + VIEWS,
                    DROP_VIEWS + f"ALTER TABLE runs_rolloutturns ALTER COLUMN doc TYPE json USING doc::json, {LZ4};"
                    + VIEWS,
                ),
            ],
            state_operations=[
                migrations.AlterField(model_name="rolloutturns", name="doc",
                                      field=deeprepo_web.runs.models.JsonTextColumn()),
            ],
        ),
    ]
