# The Artifact model now lives in the artifacts app (its 0001 takes it over with db_table
# "runs_artifact"): runs forget it in their state only; the table and its rows are untouched.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0010_metric_axis"),
        ("artifacts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Artifact")],
            database_operations=[],
        ),
    ]
