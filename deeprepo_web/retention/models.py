"""How long a project keeps the bulky parts of its rollouts (turn and tool-call bodies, OTLP spans
and log records). Runs, rollouts' numbers, metrics and summaries are kept whatever the setting."""

from __future__ import annotations

from django.db import models


class RetentionPolicy(models.Model):
    project = models.OneToOneField("accounts.Project", on_delete=models.CASCADE, related_name="retention")
    keep_days = models.PositiveIntegerField(null=True, blank=True, help_text="empty: keep forever")
    bodies_cleared = models.BigIntegerField(default=0)  # totals, shown on the settings page
    otlp_items_deleted = models.BigIntegerField(default=0)
    last_sweep_at = models.DateTimeField(null=True, blank=True)


class RetentionMark(models.Model):
    """Per run: every rollout up to this id has had its bodies cleared (ids grow with time, so the
    sweep walks each run forward by its (run, id) index and never rereads what it cleared)."""

    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, primary_key=True, related_name="+")
    rollout_id = models.BigIntegerField(default=0)
