"""labels_mark.rollout_id refers to its rollout through two statement-level triggers instead of a
foreign key: deleting a run no longer checks each of its rollouts (runs/references.py)."""

import django.db.models.deletion
from django.db import migrations, models

from deeprepo_web.runs.references import rollout_reference


class Migration(migrations.Migration):

    dependencies = [
        ('labels', '0002_mark_fewer_indexes'),
        ('runs', '0022_rollout_reference_functions'),
    ]

    operations = [
        migrations.AlterField(
            model_name='mark',
            name='rollout',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='marks', to='runs.rollout'),
        ),
        rollout_reference("labels_mark"),
    ]
