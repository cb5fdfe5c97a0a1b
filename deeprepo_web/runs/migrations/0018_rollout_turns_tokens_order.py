"""The rollouts list sorted by turns or by tokens reads a run's rollouts in that order from an index, as
runs 0016 did for reward: one index each, read backwards for the other direction (neither column's order
has NULLs to place). Built concurrently: ingest and pages go on."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Coalesce


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("runs", "0017_fewer_indexes")]

    operations = [
        AddIndexConcurrently("rollout", models.Index(fields=["run", "num_turns", "id"], name="rollout_run_turns")),
        # The expression is runs.models.total_tokens() as it is today, written out: a migration keeps its shape.
        AddIndexConcurrently("rollout", models.Index(
            F("run"), Coalesce("input_tokens", 0) + Coalesce("output_tokens", 0), F("id"), name="rollout_run_tokens")),
    ]
