"""Checkpoint-eval rules: "when run R logs a checkpoint, launch eval template T on cluster C with its path".

A rule watches one training run; each checkpoint it acts on gets a CheckpointEval row (unique per
rule and step), whose job's run is the eval, linked to the training run at that step.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.models import Cluster, Job, JobTemplate
from deeprepo_web.runs.models import Run, new_public_id


class Trigger(models.TextChoices):
    ARTIFACT = "artifact", "an artifact of kind checkpoint is logged"
    STEPS = "steps", "every N steps"


class CheckpointRule(models.Model):
    public_id = models.CharField(max_length=24, unique=True, default=new_public_id)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="checkpoint_rules")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoint_rules")
    template = models.ForeignKey(JobTemplate, on_delete=models.PROTECT, related_name="checkpoint_rules")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="checkpoint_rules")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    trigger = models.CharField(max_length=8, choices=Trigger.choices, default=Trigger.ARTIFACT)
    artifact_kind = models.CharField(max_length=64, default="checkpoint")
    every_steps = models.IntegerField(null=True, blank=True)
    # The template parameter that gets the checkpoint's path, and (optional) the one that gets its step.
    path_param = models.CharField(max_length=64)
    step_param = models.CharField(max_length=64, blank=True, default="")
    # {output_dir} (the training job's), {artifact} (the artifact's name), {step}, {run_id}.
    path_template = models.CharField(max_length=1000, default="{output_dir}/{artifact}")
    params = models.JSONField(default=dict, blank=True)  # the template's other parameters
    max_at_once = models.IntegerField(default=10)
    enabled = models.BooleanField(default=True)
    # How far the rule has looked: artifacts by id, steps by number.
    last_artifact_id = models.BigIntegerField(default=0)
    last_step = models.BigIntegerField(default=-1)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["enabled"], name="ckptrule_enabled")]

    def __str__(self) -> str:
        return f"checkpoint rule {self.public_id} on run {self.run_id}"


class CheckpointEval(models.Model):
    rule = models.ForeignKey(CheckpointRule, on_delete=models.CASCADE, related_name="evals")
    step = models.BigIntegerField()
    path = models.CharField(max_length=2000)
    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="checkpoint_eval")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["step"]
        constraints = [models.UniqueConstraint(fields=["rule", "step"], name="ckpteval_rule_step_unique")]
