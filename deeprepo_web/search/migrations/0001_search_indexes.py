"""Full-text and trigram GIN indexes on the runs tables (turns, tool calls, rollouts, example prompts)."""

from django.db import migrations

from deeprepo_web.search.texts import index_sql

# Changing an expression in texts.py needs a new migration that rebuilds its index.
INDEXES = index_sql()


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0006_rollout_run_id"),
    ]

    operations = [
        # pg_trgm is a trusted extension (PG 13+): the database owner may create it.
        migrations.RunSQL("CREATE EXTENSION IF NOT EXISTS pg_trgm", migrations.RunSQL.noop),
        *[migrations.RunSQL(create, drop) for create, drop in INDEXES],
    ]
