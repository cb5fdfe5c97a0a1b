"""sharing_sharelink.rollout_id refers to its rollout through two statement-level triggers instead of a
foreign key: deleting a run no longer checks each of its rollouts (runs/references.py)."""

import django.db.models.deletion
from django.db import migrations, models

from deeprepo_web.runs.references import rollout_reference


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0022_rollout_reference_functions'),
        ('sharing', '0002_sharelink_report_alter_sharelink_kind'),
    ]

    operations = [
        migrations.AlterField(
            model_name='sharelink',
            name='rollout',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.rollout'),
        ),
        rollout_reference("sharing_sharelink"),
    ]
