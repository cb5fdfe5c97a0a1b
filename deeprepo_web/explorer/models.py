"""What the runs explorer remembers per user: the runs table's columns in each project."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from deeprepo_web.accounts.models import Project


class RunTableColumns(models.Model):
    """The columns a user chose for a project's runs table: fixed columns hidden, config keys shown."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, on_delete=models.CASCADE)
    hidden = models.JSONField(default=list)  # names of fixed columns (explorer.columns.FIXED)
    config = models.JSONField(default=list)  # dotted config keys shown as columns, in order
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "project"], name="run_table_columns_once")]
