"""The rollouts list sorted by reward reads a run's rollouts in that order from an index, both ways:
(run, reward, id) replaces (run, reward), which also served reward ranges and a run's reward bounds, and
(run, reward DESC NULLS LAST, id DESC) serves best-first. Built concurrently: ingest and pages go on."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.models import F


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("runs", "0015_database_jit_off")]

    operations = [
        AddIndexConcurrently("rollout", models.Index(fields=["run", "reward", "id"], name="rollout_run_reward_id")),
        AddIndexConcurrently("rollout", models.Index(F("run"), F("reward").desc(nulls_last=True), F("id").desc(),
                                                     name="rollout_run_reward_desc")),
        RemoveIndexConcurrently("rollout", "rollout_run_reward"),
    ]
