"""search_doc becomes LIST-partitioned by run_id (issue 30 item 3): deleting a run drops its
partition (search/partitions.py) instead of deleting its documents one by one, the biggest share
of a run deletion's time (bench/run_delete.py, docs/scale.md).

The key includes the partition key, as Postgres requires: (src, obj, run_id). A prompt document has
no run: its run_id becomes 0 (partition search_doc_0). An existing database keeps its documents:
a new partitioned table is made, one partition per run, the rows are copied over, the old table
dropped and the new one renamed; the indexes are built per partition after the copy.
"""

from django.db import migrations, models

FORWARD = """
CREATE TABLE search_doc_new (
    src varchar(8) NOT NULL,
    obj bigint NOT NULL,
    rollout_id bigint NULL,
    run_id bigint NOT NULL,
    turn_index integer NULL,
    body text NOT NULL,
    CONSTRAINT search_doc_new_pkey PRIMARY KEY (src, obj, run_id)
) PARTITION BY LIST (run_id);
CREATE TABLE search_doc_0 PARTITION OF search_doc_new FOR VALUES IN (0);
DO $$ DECLARE r bigint; BEGIN
  FOR r IN SELECT id FROM runs_run ORDER BY id LOOP
    EXECUTE format('CREATE TABLE search_doc_%s PARTITION OF search_doc_new FOR VALUES IN (%s)', r, r);
  END LOOP;
END $$;
-- Documents of runs deleted before (no partition) are left behind: search never showed them.
INSERT INTO search_doc_new (src, obj, rollout_id, run_id, turn_index, body)
SELECT d.src, d.obj, d.rollout_id, coalesce(d.run_id, 0), d.turn_index, d.body FROM search_doc d
WHERE d.run_id IS NULL OR EXISTS (SELECT 1 FROM runs_run r WHERE r.id = d.run_id);
DROP TABLE search_doc;
ALTER TABLE search_doc_new RENAME TO search_doc;
ALTER INDEX search_doc_new_pkey RENAME TO search_doc_pkey;
CREATE INDEX search_doc_rollout ON search_doc (rollout_id);
CREATE INDEX search_doc_tsv ON search_doc USING gin
    ((to_tsvector('simple'::regconfig, translate(body, '/.<>', '    '))));
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX search_doc_trgm ON search_doc USING gin (body gin_trgm_ops);
  END IF;
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("search", "0002_tsv_from_body"), ("runs", "0010_metric_axis")]

    operations = [
        migrations.RunSQL(
            FORWARD,
            migrations.RunSQL.noop,
            state_operations=[
                migrations.RemoveField(model_name="doc", name="pk"),
                migrations.AlterField(model_name="doc", name="run_id", field=models.BigIntegerField()),
                migrations.AddField(
                    model_name="doc", name="pk",
                    field=models.CompositePrimaryKey("src", "obj", "run_id", blank=True, editable=False,
                                                     primary_key=True, serialize=False)),
            ],
        ),
    ]
