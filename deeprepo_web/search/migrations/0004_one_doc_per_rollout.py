"""One search document per rollout (issue 30, items 1 and 2): a rollout's turn, tool-call and rollout
documents are folded into one (its texts in turn order joined by newlines, cut into parts past 50,000
characters, as search.indexer._rollout_docs does); prompts stay one document per example. At 2*10^4
rollouts this took the search table from 5,450 to 2,200 B per rollout (docs/scale.md).

The folded documents go into a new table, built with its indexes after it is filled (faster than
keeping GIN indexes up row by row, and no dead rows left behind), which then takes search_doc's place.
Searches go on while the documents are folded (the old table is only read) and wait for the swap at
the end; new documents wait from the start (the table is locked against writes, so an indexer of the
old code still running cannot add a document the fold would miss). The text comes from the documents themselves
(no row of the run tables is read for it), except for rollouts the old indexer had not finished —
a turn or call past its watermark with no document, or no document for the rollout itself — which
are left to the new indexer: its rollout watermark is moved back before the first of them.
"""

from django.db import migrations, models

# The ordering and parts of search.indexer._rollout_docs as of this migration, over the old documents:
# a turn's document, then its calls' (their turn's index), the rollout's answer and error last.
FOLD = (
    "INSERT INTO search_doc_folded (src, obj, part, rollout_id, run_id, body) "
    "SELECT 'rollout', q.rid, q.part, q.rid, q.run_id, string_agg(q.body, E'\\n' ORDER BY q.k1, q.k2, q.k3) "
    "FROM (SELECT p.rid, p.run_id, p.body, p.k1, p.k2, p.k3, (coalesce(sum(length(p.body)) OVER ("
    "PARTITION BY p.rid ORDER BY p.k1, p.k2, p.k3 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) "
    "/ 50000)::smallint AS part FROM ("
    "SELECT d.rollout_id, d.run_id, d.body, d.turn_index, CASE d.src WHEN 'turn' THEN 0 WHEN 'call' THEN 1 ELSE 2 END, "
    "d.obj FROM search_doc d WHERE d.rollout_id IS NOT NULL AND d.src IN ('turn', 'call', 'rollout')"
    ") p(rid, run_id, body, k1, k2, k3)) q GROUP BY q.rid, q.run_id, q.part"
)

# Rollouts the old indexer had not finished (it re-read 20,000 ids behind each watermark).
UNFINISHED = """
CREATE TEMPORARY TABLE search_unfinished ON COMMIT DROP AS
SELECT t.rollout_id AS id FROM runs_turn t
 WHERE t.id > coalesce((SELECT last_id FROM search_watermark WHERE src = 'turn'), 0) - 20000
   AND NOT EXISTS (SELECT 1 FROM search_doc d WHERE d.src = 'turn' AND d.obj = t.id)
UNION SELECT c.rollout_id FROM runs_toolcall c
 WHERE c.id > coalesce((SELECT last_id FROM search_watermark WHERE src = 'call'), 0) - 20000
   AND NOT EXISTS (SELECT 1 FROM search_doc d WHERE d.src = 'call' AND d.obj = c.id)
UNION SELECT DISTINCT d.rollout_id FROM search_doc d
 WHERE d.src IN ('turn', 'call') AND NOT EXISTS (
   SELECT 1 FROM search_doc o WHERE o.src = 'rollout' AND o.obj = d.rollout_id)
"""

FORWARD = f"""
LOCK TABLE search_doc IN EXCLUSIVE MODE;
CREATE TABLE search_doc_folded (src varchar(8) NOT NULL, obj bigint NOT NULL, part smallint NOT NULL,
  rollout_id bigint NULL, run_id bigint NULL, body text NOT NULL);
{UNFINISHED};
{FOLD};
DELETE FROM search_doc_folded f USING search_unfinished u WHERE f.src = 'rollout' AND f.obj = u.id;
INSERT INTO search_doc_folded (src, obj, part, rollout_id, run_id, body)
  SELECT src, obj, 0, NULL, NULL, body FROM search_doc WHERE src = 'prompt';
INSERT INTO search_watermark (src, last_id)
  SELECT 'rollout', (SELECT min(id) - 1 FROM search_unfinished) WHERE EXISTS (SELECT 1 FROM search_unfinished)
  ON CONFLICT (src) DO UPDATE SET last_id = least(search_watermark.last_id, EXCLUDED.last_id);
DELETE FROM search_watermark WHERE src IN ('turn', 'call');
DROP TABLE search_doc;
ALTER TABLE search_doc_folded RENAME TO search_doc;
ALTER TABLE search_doc ADD CONSTRAINT search_doc_pkey PRIMARY KEY (src, obj, part);
CREATE INDEX search_doc_run ON search_doc (run_id);
CREATE INDEX search_doc_tsv ON search_doc USING gin ((to_tsvector('simple'::regconfig, translate(body, '/.<>', '    '))));
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX search_doc_trgm ON search_doc USING gin (body gin_trgm_ops);
  END IF;
END $$;
ANALYZE search_doc;
"""


class Migration(migrations.Migration):
    dependencies = [("search", "0003_doc_run_index")]

    operations = [
        migrations.RunSQL(
            FORWARD,
            # Irreversible: the per-turn documents are gone (a backup, docs/operations.md, keeps them).
            state_operations=[
                migrations.RemoveIndex(model_name="doc", name="search_doc_rollout"),
                migrations.RemoveField(model_name="doc", name="turn_index"),
                migrations.AddField(model_name="doc", name="part", field=models.SmallIntegerField(default=0)),
                migrations.AlterField(
                    model_name="doc", name="pk",
                    field=models.CompositePrimaryKey("src", "obj", "part", blank=True, editable=False,
                                                     primary_key=True, serialize=False)),
            ],
        ),
    ]
