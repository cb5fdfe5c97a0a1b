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
