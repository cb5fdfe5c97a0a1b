"""Spans and GenAI log records received over OTLP, kept until their trace is whole.

A trace's spans arrive in several requests and in any order; the rollout made from them is
rebuilt from these rows each time something new arrives, so the rows are the source of truth.
"""

from __future__ import annotations

from django.db import models

from deeprepo_web.runs.models import Run


class OtlpItem(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)  # hex, as OTLP/JSON writes it
    # The span id (hex) for a span; "log:" + a hash of the record for a log record.
    key = models.CharField(max_length=80)
    kind = models.CharField(max_length=8)  # span | log
    span_id = models.CharField(max_length=16)  # a span's parent, or the span a log record belongs to
    name = models.CharField(max_length=500, blank=True, default="")
    start_ns = models.BigIntegerField(default=0)
    end_ns = models.BigIntegerField(default=0)
    data = models.JSONField(default=dict)  # attributes, events, status
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "trace_id", "key"], name="otlp_item_unique"),
        ]


class OtlpQuiet(models.Model):
    """A project's quiet period: an OTLP run that got no span or log record for this long is
    finished by beat (OTLP has no "run ended" message). Without a row, DEFAULT_QUIET_MINUTES."""

    project = models.OneToOneField("accounts.Project", on_delete=models.CASCADE, related_name="otlp_quiet")
    quiet_minutes = models.PositiveIntegerField(default=60)


DEFAULT_QUIET_MINUTES = 60
