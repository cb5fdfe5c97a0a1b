"""Clusters, job templates, jobs and their event timeline.

A Job moves through JobStatus by conditional updates only (see services.py): the row's status
is the lock, so a duplicated or crashed task can never act twice.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey, Project
from deeprepo_web.crypto import decrypt_secrets, encrypt_secrets
from deeprepo_web.runs.models import Run, new_public_id


class ClusterKind(models.TextChoices):
    LOCAL = "local", "Local (this worker's machine)"
    SLURM = "slurm", "Slurm (here or over SSH)"
    RAY = "ray", "Ray (Job Submission API)"


class Cluster(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="clusters")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=ClusterKind.choices)
    # The Celery queue its jobs' dispatch, sync, cancel and log reads go to: a worker started
    # beside this cluster (`celery ... -Q <queue>`) listens there. "" = the default queue.
    queue = models.CharField(max_length=100, blank=True, default="")
    # Plain settings the backend reads (host, known_hosts, state_dir ...) plus two of ours:
    # deeprepo_url (how jobs reach this server) and output_root (where eval outputs go).
    settings = models.JSONField(default=dict, blank=True)
    # Fernet token of a JSON object {name: secret}; never rendered back to any page.
    secrets_token = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    last_test_at = models.DateTimeField(null=True, blank=True)
    last_test_ok = models.BooleanField(null=True)
    last_test_message = models.TextField(blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="cluster_project_name_unique")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def task_queue(self) -> str:
        return self.queue or str(settings.CELERY_TASK_DEFAULT_QUEUE)

    def get_secrets(self) -> dict[str, str]:
        return decrypt_secrets(self.secrets_token)

    def set_secrets(self, values: dict[str, str]) -> None:
        self.secrets_token = encrypt_secrets(values)

    def stored_secret_names(self) -> list[str]:
        try:
            return sorted(self.get_secrets())
        except Exception:  # noqa: BLE001 - the page says "unreadable", never crashes
            return []


class TemplateKind(models.TextChoices):
    TRAIN = "train"
    EVAL = "eval"


class JobTemplate(models.Model):
    """A command with {placeholders} and the schema of the form that fills them.

    project=None marks a built-in template, visible in every project."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="job_templates")
    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=8, choices=TemplateKind.choices, default=TemplateKind.TRAIN)
    description = models.TextField(blank=True, default="")
    command_template = models.TextField()
    params_schema = models.JSONField(default=list, blank=True)
    # When the job ends, import the job's output_dir into its run (eval harness outputs).
    import_outputs = models.BooleanField(default=False)
    # What the launch form starts from: partition, nodes, GPUs per node, time limit (Resources keys).
    resources = models.JSONField(default=dict, blank=True)
    # Max retries on node failure: a job that dies because of its node or cluster (see
    # jobs.services.retries) is submitted again into the same run up to this many times.
    max_node_retries = models.PositiveSmallIntegerField(default=0)
    builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "slug"], name="template_project_slug_unique"),
            models.UniqueConstraint(
                fields=["slug"], condition=models.Q(project__isnull=True), name="template_builtin_slug_unique"
            ),
        ]
        ordering = ["-builtin", "name"]

    def __str__(self) -> str:
        return self.name


class JobStatus(models.TextChoices):
    PENDING = "pending"  # created; waiting for dispatch_job
    SUBMITTING = "submitting"  # a worker holds it and is talking to the cluster
    QUEUED = "queued"  # on the cluster, waiting for resources
    RUNNING = "running"
    # The cluster put it back in its queue (Slurm requeue: preempted, node failure, an admin); it
    # runs again under the same cluster id and logs into the same run.
    REQUEUED = "requeued"
    CANCELLING = "cancelling"  # the user asked; cancel_job is on it
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"  # the cluster forgot the job and left no exit status


FINAL_JOB_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED, JobStatus.LOST})
# States in which a job exists (or may exist) on the cluster and sync_jobs follows it.
ACTIVE_JOB_STATUSES = frozenset({JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.REQUEUED, JobStatus.CANCELLING})
# Prefix of Job.error while its cluster's queue has no live worker (services/workers.py writes it,
# sync clears it when one answers). Kept here so the job page can tell a wait from a failure.
WAIT_ERROR = "waiting for a worker on"


class Job(models.Model):
    public_id = models.CharField(max_length=24, unique=True, default=new_public_id)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    template = models.ForeignKey(JobTemplate, null=True, on_delete=models.SET_NULL, related_name="jobs")
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="jobs")
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="job")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    name = models.CharField(max_length=200)
    parameters = models.JSONField(default=dict)
    resources = models.JSONField(default=dict)
    # The command line as built at launch (placeholders filled with shlex-quoted values).
    command = models.TextField()
    output_dir = models.CharField(max_length=1000, blank=True, default="")
    status = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.PENDING)
    external_id = models.CharField(max_length=200, blank=True, default="")
    attempts = models.IntegerField(default=0)
    # Times the cluster requeued the job (preemption, node failure), as it last reported.
    requeues = models.IntegerField(default=0)
    # The template's retry policy at launch, and how many times we resubmitted after a node failure.
    max_node_retries = models.PositiveSmallIntegerField(default=0)
    node_retries = models.PositiveSmallIntegerField(default=0)
    exit_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    log_tail = models.TextField(blank=True, default="")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "-created_at"], name="job_project_created"),
            models.Index(fields=["status"], name="job_status"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_JOB_STATUSES

    @property
    def can_cancel(self) -> bool:
        return self.status in {JobStatus.PENDING, JobStatus.SUBMITTING, JobStatus.QUEUED, JobStatus.RUNNING,
                               JobStatus.REQUEUED}

    @property
    def is_waiting_for_worker(self) -> bool:
        """Job.error holds a wait, not a failure: the job is fine, nobody listens on its queue yet."""
        return self.error.startswith(WAIT_ERROR)

    @property
    def duration_seconds(self) -> float | None:
        start = self.started_at or self.submitted_at
        if start is None:
            return None
        return ((self.finished_at or timezone.now()) - start).total_seconds()

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.public_id, "status": self.status, "external_id": self.external_id,
                "exit_code": self.exit_code, "error": self.error}


class JobEvent(models.Model):
    """One line of the job's timeline: a transition (from != to) or a note (retry, import ...)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    from_status = models.CharField(max_length=12, blank=True, default="")
    to_status = models.CharField(max_length=12)
    reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["job", "at"], name="jobevent_job_at")]


class JobAttempt(models.Model):
    """One submission of a job to its cluster: the first, then one per resubmission after a node
    failure. A Slurm requeue is not a new attempt (the cluster reruns the same id)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveSmallIntegerField()
    external_id = models.CharField(max_length=200)
    submitted_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=12, choices=JobStatus.choices, default=JobStatus.QUEUED)
    reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="jobattempt_job_number_unique")]


class WorkerQueue(models.Model):
    """A Celery worker listening on a queue, as the worker last said (every few seconds).

    The clusters page and the job sync read it to tell "no worker is listening on this cluster's
    queue" apart from a job that is merely slow; rows of a worker that stopped age out."""

    hostname = models.CharField(max_length=200)
    queue = models.CharField(max_length=100)
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hostname", "queue"], name="workerqueue_host_queue_unique")]
        indexes = [models.Index(fields=["queue", "-seen_at"], name="workerqueue_queue_seen")]
