"""An index on search_doc.run_id (issue 30 item 3): deleting a run, and counting its documents for the
confirmation, read every run's documents without it — a scan of the biggest table (docs/scale.md).

Built CONCURRENTLY so search and the indexer go on while a filled table is read (not atomic: that
cannot run in a transaction). A build that was interrupted leaves an invalid index of this name
behind; it is dropped first, so running the migration again finishes the job.
"""

from typing import Any

from django.db import migrations, models

NAME = "search_doc_run"


def _drop_invalid_leftover(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cur:
        cur.execute("SELECT NOT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass(%s)", [NAME])
        row = cur.fetchone()
        if row and row[0]:
            cur.execute(f"DROP INDEX CONCURRENTLY {NAME}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("search", "0002_tsv_from_body")]

    operations = [
        migrations.RunPython(_drop_invalid_leftover, migrations.RunPython.noop),
        migrations.RunSQL(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {NAME} ON search_doc (run_id)",
            f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}",
            state_operations=[migrations.AddIndex(model_name="doc", index=models.Index(fields=["run_id"], name=NAME))],
        ),
    ]
