"""A smaller search copy (issue 30 item 1). At 10^5 rollouts search_doc was 845 MB, 69 % of all bytes;
its stored tsvector alone was 308 MB, twice the bodies it came from. Now:

- the words index is an expression index over the body (texts.fts), no tsvector column; the search
  queries write the same expression (sql.doc_match): keep the two in step, or the planner stops
  using the index;
- (src, obj) is the primary key: no id column, no id index (26 MB at 10^5).

A filled database keeps its documents: the table is rewritten (VACUUM FULL, which also drops the
bytes of the removed columns) and the words index rebuilt from the bodies. Search waits meanwhile
(VACUUM FULL holds search_doc exclusively): 2 min at 10^5 rollouts on the loaded 2-core machine,
docs/scale.md. Not atomic (VACUUM cannot run in a transaction): each step can be run again.
"""

from django.db import migrations, models

WORDS = ("CREATE INDEX IF NOT EXISTS search_doc_tsv ON search_doc USING gin "
         "((to_tsvector('simple'::regconfig, translate(body, '/.<>', '    '))))")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("search", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "DROP INDEX IF EXISTS search_doc_tsv; ALTER TABLE search_doc DROP COLUMN IF EXISTS tsv",
            migrations.RunSQL.noop,
            state_operations=[migrations.RemoveIndex(model_name="doc", name="search_doc_tsv"),
                              migrations.RemoveField(model_name="doc", name="tsv")],
        ),
        migrations.RunSQL(
            "ALTER TABLE search_doc DROP CONSTRAINT IF EXISTS search_doc_src_obj; "
            "ALTER TABLE search_doc DROP COLUMN IF EXISTS id",
            migrations.RunSQL.noop,
            state_operations=[migrations.RemoveConstraint(model_name="doc", name="search_doc_src_obj"),
                              migrations.RemoveField(model_name="doc", name="id")],
        ),
        migrations.RunSQL("VACUUM FULL search_doc", migrations.RunSQL.noop),
        migrations.RunSQL(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'search_doc_pkey' "
            "AND conrelid = 'search_doc'::regclass) THEN "
            "ALTER TABLE search_doc ADD CONSTRAINT search_doc_pkey PRIMARY KEY (src, obj); END IF; END $$",
            migrations.RunSQL.noop,
            state_operations=[migrations.AddField(
                model_name="doc", name="pk",
                field=models.CompositePrimaryKey("src", "obj", blank=True, editable=False, primary_key=True,
                                                 serialize=False))],
        ),
        migrations.RunSQL(WORDS, migrations.RunSQL.noop),
    ]
