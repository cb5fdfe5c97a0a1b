# The Artifact model moved here from the runs app (runs 0011 drops it from runs' state). Its table,
# runs_artifact, stays as it is with its rows: this migration only tells Django the model is ours.

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("runs", "0010_metric_axis"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Artifact",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("name", models.CharField(max_length=1000)),
                        ("kind", models.CharField(default="file", max_length=64)),
                        ("size", models.BigIntegerField()),
                        ("sha256", models.CharField(max_length=64)),
                        ("storage_key", models.CharField(max_length=1200)),
                        ("status", models.CharField(choices=[("pending", "Pending"), ("ready", "Ready")],
                                                    default="pending", max_length=12)),
                        ("upload_id", models.CharField(blank=True, default="", max_length=500)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("confirmed_at", models.DateTimeField(blank=True, null=True)),
                        ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                  related_name="artifacts", to="runs.run")),
                    ],
                    options={
                        "db_table": "runs_artifact",
                        "constraints": [models.UniqueConstraint(fields=("run", "name"),
                                                                name="artifact_run_name_unique")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
