"""Postgres's JIT compiler off for this database, for every session opened after it (runs/dbsettings.py:
why, and what a role that does not own the database gets)."""

from django.db import migrations

from deeprepo_web.runs.dbsettings import RESET, SET


class Migration(migrations.Migration):
    dependencies = [("runs", "0014_rollout_error_sig")]

    # The database's setting reaches sessions opened after it; SET gives it to this one too.
    operations = [migrations.RunSQL([SET, "SET jit = off"], [RESET, "RESET jit"])]
