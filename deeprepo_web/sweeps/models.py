"""Sweeps: one template launched many times over a parameter space; each trial is a job with its run.

The rows are the truth; Optuna's study is rebuilt from them whenever the sweep advances
(`study.py`), so a worker restart loses nothing and no second store holds sweep state.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.models import Cluster, Job, JobTemplate
from deeprepo_web.runs.models import new_public_id


class Method(models.TextChoices):
    GRID = "grid", "Grid (every combination)"
    RANDOM = "random", "Random"
    TPE = "tpe", "TPE (Optuna's model-based sampler)"


class Pruner(models.TextChoices):
    NONE = "none", "None"
    MEDIAN = "median", "Median (stop trials below the median at the same step)"
    HALVING = "halving", "Successive halving"


class Direction(models.TextChoices):
    MAXIMIZE = "maximize"
    MINIMIZE = "minimize"


class SweepStatus(models.TextChoices):
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"


class Sweep(models.Model):
    public_id = models.CharField(max_length=24, unique=True, default=new_public_id)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sweeps")
    template = models.ForeignKey(JobTemplate, on_delete=models.PROTECT, related_name="sweeps")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="sweeps")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    name = models.CharField(max_length=200)
    method = models.CharField(max_length=8, choices=Method.choices)
    # name -> {"values": [...]} or {"low", "high", "log", "int"}; see space.py.
    space = models.JSONField(default=dict)
    # Parameters every trial gets as they are (the template's defaults fill the rest).
    fixed = models.JSONField(default=dict, blank=True)
    metric = models.CharField(max_length=500)
    direction = models.CharField(max_length=8, choices=Direction.choices, default=Direction.MAXIMIZE)
    max_trials = models.IntegerField()
    max_parallel = models.IntegerField()
    pruner = models.CharField(max_length=8, choices=Pruner.choices, default=Pruner.NONE)
    # Median: steps before a trial may be pruned; halving: the first rung's steps (0 = Optuna's "auto").
    warmup_steps = models.IntegerField(default=0)
    # Median: complete trials needed before any pruning.
    startup_trials = models.IntegerField(default=2)
    seed = models.IntegerField(default=0)
    status = models.CharField(max_length=10, choices=SweepStatus.choices, default=SweepStatus.RUNNING)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "-created_at"], name="sweep_project_created"),
            models.Index(fields=["status"], name="sweep_status"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    @property
    def is_final(self) -> bool:
        return self.status != SweepStatus.RUNNING


class TrialStatus(models.TextChoices):
    QUEUED = "queued"  # its job is pending, submitting or queued on the cluster
    RUNNING = "running"
    COMPLETE = "complete"  # the job succeeded and logged the metric
    PRUNED = "pruned"  # stopped early by the pruner; its job was cancelled
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_TRIAL_STATUSES = frozenset({TrialStatus.COMPLETE, TrialStatus.PRUNED, TrialStatus.FAILED,
                                  TrialStatus.CANCELLED})
OPEN_TRIAL_STATUSES = (TrialStatus.QUEUED, TrialStatus.RUNNING)


class Trial(models.Model):
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="trials")
    number = models.IntegerField()  # Optuna's trial number: the order trials were asked
    job = models.OneToOneField(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="sweep_trial")
    params = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=TrialStatus.choices, default=TrialStatus.QUEUED)
    value = models.FloatField(null=True, blank=True)  # the metric's last value when the trial ended
    # step -> metric value (keys are strings: JSON), what the pruner compares at equal steps.
    intermediate = models.JSONField(default=dict, blank=True)
    last_step = models.BigIntegerField(null=True, blank=True)
    # Optuna's per-trial bookkeeping (the grid point, halving rungs), kept so a rebuilt study sees it.
    system_attrs = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["sweep", "number"], name="trial_sweep_number_unique")]
        indexes = [models.Index(fields=["sweep", "status"], name="trial_sweep_status")]

    def __str__(self) -> str:
        return f"trial {self.number} of {self.sweep_id}"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_TRIAL_STATUSES
