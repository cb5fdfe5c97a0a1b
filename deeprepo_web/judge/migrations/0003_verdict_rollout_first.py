"""A verdict's unique key leads with its rollout (rollout, job), not its job.

Deleting a run's rollouts checks each one's foreign key from judge_verdict at commit, and with no index
leading with rollout_id each check read every verdict: 10,000 verdicts (124 pages) added 72 µs to each of
10,000 deleted rollouts, 0.88 s against 0.17 s with such an index; it grows with verdicts times rollouts
(docs/scale.md, "Deleting a run: its foreign-key checks"). A job's verdicts keep their own index on job_id.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("judge", "0002_initial")]

    operations = [
        migrations.RemoveConstraint(model_name="verdict", name="verdict_job_rollout"),
        migrations.AddConstraint(
            model_name="verdict",
            constraint=models.UniqueConstraint(fields=("rollout", "job"), name="verdict_rollout_job"),
        ),
    ]
