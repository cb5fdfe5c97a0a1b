"""Search without a stored copy of the text (issue 30 item 1): search_doc held every body a second
time (69 % of the bytes on disk at 10^5 rollouts, docs/scale.md). The words and trigram GIN indexes now
sit on the source tables themselves, as expression indexes over the same bodies the search queries
write (deeprepo_web/search/texts.py: keep the two in step, or the planner stops using them).

Written out here rather than generated from texts.py, so this migration means the same thing later.
An existing database keeps its rows; the indexes are built from them (minutes at 10^6 rollouts) and
the copy is dropped. Going back recreates empty search tables: the old indexer refills them.
"""

from django.db import migrations

TSV = {
    "runs_turn": "left(content || ' ' || reasoning, 100000)",
    "runs_toolcall": "left(name || ' ' || coalesce(arguments::text, '') || ' ' || output, 100000)",
    "runs_rollout": "left(final_answer || ' ' || error, 100000)",
    "runs_example": "left(coalesce(prompt::text, ''), 100000)",
}


def _create() -> str:
    words = "\n".join(
        f"CREATE INDEX IF NOT EXISTS {table}_search_tsv ON {table} USING gin "
        f"((to_tsvector('simple'::regconfig, translate({body}, '/.<>', '    '))));"
        for table, body in TSV.items())
    trigrams = "\n".join(
        f"CREATE INDEX IF NOT EXISTS {table}_search_trgm ON {table} USING gin (({body}) gin_trgm_ops);"
        for table, body in TSV.items())
    # pg_trgm is a trusted extension (PG 13+); where it is missing (the embedded Postgres of `make run`)
    # substring and regex searches still work, by a scan.
    return f"""
    {words}
    DO $$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
        {trigrams}
      END IF;
    END $$;
    """


def _drop() -> str:
    return "\n".join(f"DROP INDEX IF EXISTS {table}_search_tsv; DROP INDEX IF EXISTS {table}_search_trgm;"
                     for table in TSV)


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0001_initial"),
        ("runs", "0010_metric_axis"),
    ]

    operations = [
        migrations.RunSQL(_create(), _drop()),
        migrations.DeleteModel(name="Doc"),
        migrations.DeleteModel(name="Watermark"),
    ]
