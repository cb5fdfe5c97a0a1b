"""Marks' indexes on label alone and on rollout alone repeated the leading column of mark_unique and of
mark_rollout_label; dropped."""

from django.db import migrations, models
from django.db.models.deletion import CASCADE


class Migration(migrations.Migration):
    dependencies = [("labels", "0001_initial"), ("runs", "0017_fewer_indexes")]

    operations = [
        migrations.AlterField("mark", "label", models.ForeignKey(
            "labels.label", on_delete=CASCADE, related_name="marks", db_index=False)),
        migrations.AlterField("mark", "rollout", models.ForeignKey(
            "runs.rollout", on_delete=CASCADE, related_name="marks", db_index=False)),
    ]
