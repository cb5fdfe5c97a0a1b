"""A partial index of the NaN and ±Infinity points: a chart marks them without scanning every point."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("runs", "0007_i18_ingest_refusal")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS runs_metric_nonfinite ON runs_metric (series_id, step) "
            "WHERE value IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)",
            "DROP INDEX IF EXISTS runs_metric_nonfinite",
        ),
    ]
