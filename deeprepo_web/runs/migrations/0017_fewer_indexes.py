"""Indexes no read needs any more, dropped; built and dropped concurrently, so ingest and pages go on.

- runs_metric / runs_metricrollup: the index on series alone repeated the leading column of the key.
- runs_toolcall: (turn, index) and (rollout, name) give way to (rollout). Every read of calls names
  their rollout; nothing has asked calls by name since the rollout row holds its tools (runs 0013).
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models.deletion import DO_NOTHING


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("runs", "0016_rollout_reward_order")]

    operations = [
        migrations.AlterField("metric", "series", models.ForeignKey(
            "runs.metricseries", on_delete=DO_NOTHING, db_constraint=False, db_index=False)),
        migrations.AlterField("metricrollup", "series", models.ForeignKey(
            "runs.metricseries", on_delete=DO_NOTHING, db_constraint=False, db_index=False)),
        AddIndexConcurrently("toolcall", models.Index(fields=["rollout"], name="toolcall_rollout")),
        RemoveIndexConcurrently("toolcall", "toolcall_turn_index"),
        RemoveIndexConcurrently("toolcall", "toolcall_rollout_name"),
    ]
