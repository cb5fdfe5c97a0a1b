"""judge_verdict.rollout_id refers to its rollout through two statement-level triggers instead of a
foreign key: deleting a run no longer checks each of its rollouts (runs/references.py)."""

import django.db.models.deletion
from django.db import migrations, models

from deeprepo_web.runs.references import rollout_reference


class Migration(migrations.Migration):

    dependencies = [
        ('judge', '0003_verdict_rollout_first'),
        ('runs', '0022_rollout_reference_functions'),
    ]

    operations = [
        migrations.AlterField(
            model_name='verdict',
            name='rollout',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='verdicts', to='runs.rollout'),
        ),
        rollout_reference("judge_verdict"),
    ]
