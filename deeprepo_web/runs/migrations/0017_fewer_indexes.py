"""Indexes no read needs any more, dropped; built and dropped concurrently, so ingest and pages go on.

- runs_metric / runs_metricrollup: the index on series alone repeated the leading column of the key.
- runs_toolcall: (turn, index) and (rollout, name) give way to (rollout). Every read of calls names
  their rollout; nothing has asked calls by name since the rollout row holds its tools (runs 0013).
- runs_blobref: an index on run twice (the foreign key's and blobref_run); runs_example: one on project,
  which example_unique leads with.
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models.deletion import CASCADE, DO_NOTHING


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("accounts", "0001_initial"), ("runs", "0016_rollout_reward_order")]

    operations = [
        migrations.AlterField("metric", "series", models.ForeignKey(
            "runs.metricseries", on_delete=DO_NOTHING, db_constraint=False, db_index=False)),
        migrations.AlterField("metricrollup", "series", models.ForeignKey(
            "runs.metricseries", on_delete=DO_NOTHING, db_constraint=False, db_index=False)),
        migrations.AlterField("blobref", "run", models.ForeignKey(
            "runs.run", on_delete=CASCADE, related_name="blob_refs", db_index=False)),
        migrations.AlterField("example", "project", models.ForeignKey(
            "accounts.project", on_delete=CASCADE, related_name="examples", db_index=False)),
        AddIndexConcurrently("toolcall", models.Index(fields=["rollout"], name="toolcall_rollout")),
        RemoveIndexConcurrently("toolcall", "toolcall_turn_index"),
        RemoveIndexConcurrently("toolcall", "toolcall_rollout_name"),
    ]
