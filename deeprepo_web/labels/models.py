from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs.models import Rollout, Run


class Label(models.Model):
    """A project's name for something found in trajectories ("gives up", "edits the test")."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=100)
    colour = models.CharField(max_length=7, default="#6b7280")  # #rrggbb, checked by the service
    description = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="label_project_name_unique")]

    def __str__(self) -> str:
        return self.name


class MarkStatus(models.TextChoices):
    CONFIRMED = "confirmed"  # a person put it, or confirmed a judge's verdict
    PROPOSED = "proposed"  # a judge's verdict waiting for a person
    REJECTED = "rejected"  # a person said the judge was wrong


class Mark(models.Model):
    """A label on a rollout, or on one turn of it (turn_index), with a note, by whom and when."""

    # Their reads go through mark_unique (label first) and mark_rollout_label (rollout first).
    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="marks", db_index=False)
    # No foreign key in Postgres: two statement-level triggers keep it (runs/references.py).
    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="marks", db_index=False,
                                db_constraint=False)
    # The rollout's run, for a run's marks (mark_run_label). Deleting the rollout deletes its marks, by SQL
    # too (runs/references.py).
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="marks", db_index=False)
    turn_index = models.IntegerField(null=True, blank=True)
    note = models.TextField(blank=True, default="")
    status = models.CharField(max_length=12, choices=MarkStatus.choices, default=MarkStatus.CONFIRMED)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    source = models.CharField(max_length=64, default="person")  # "person" or "judge:<job id>"
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # turn_index NULL (the whole rollout) is one mark too: NULLS NOT DISTINCT (PG 15).
            models.UniqueConstraint(fields=["label", "rollout", "turn_index"], name="mark_unique",
                                    nulls_distinct=False),
        ]
        indexes = [models.Index(fields=["rollout", "label"], name="mark_rollout_label"),
                   models.Index(fields=["run", "label"], name="mark_run_label")]
