"""MLflow experiments, as the `mlflow` client sees them: a name inside the API key's project.

An experiment is a label on runs here (their tag `experiment=<name>`); this row only gives it the
numeric id MLflow clients pass around. MLflow runs are our Runs (source `mlflow`, external id the
MLflow run id), so nothing else is kept twice.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project


class Experiment(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=500)
    tags = models.JSONField(default=dict, blank=True)
    deleted = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="mlflow_experiment_name_unique")]


class Trace(models.Model):
    """Which run an MLflow trace belongs to, known once its trace info arrived (`mlflow.sourceRun`)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)  # the OTLP trace id, hex (MLflow's own is "tr-" + it)
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "trace_id"], name="mlflow_trace_unique")]


class PendingSpan(models.Model):
    """A span that came over OTLP before its trace info said which run it belongs to. One whose trace
    info never comes (the client died) goes to its experiment's traces run after a while (sweep.py)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    experiment_id = models.CharField(max_length=32, default="", blank=True)  # the x-mlflow-experiment-id header
    key = models.CharField(max_length=80)
    item = models.JSONField()  # the decoded OTLP item (otlp.decode.Item), its attributes translated
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "trace_id", "key"], name="mlflow_pending_unique")]
        indexes = [models.Index(fields=["received_at"], name="mlflow_pending_received")]
