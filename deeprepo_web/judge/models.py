from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.crypto import decrypt_secrets, encrypt_secrets
from deeprepo_web.labels.models import Label
from deeprepo_web.runs.models import Rollout, Run, new_public_id


class JudgeEndpoint(models.Model):
    """A project's OpenAI-compatible endpoint for rubric judges (vLLM, a hosted API)."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="judge_endpoint")
    base_url = models.URLField(max_length=500)  # …/v1
    model = models.CharField(max_length=200)
    # Fernet token of {"api_key": …}, like cluster secrets; never rendered back to a page.
    key_token = models.TextField(blank=True, default="")
    input_per_mtok = models.FloatField(default=0.0)  # USD per million tokens, for the cost shown
    output_per_mtok = models.FloatField(default=0.0)
    updated_at = models.DateTimeField(auto_now=True)

    def api_key(self) -> str:
        return decrypt_secrets(self.key_token).get("api_key", "")

    def set_api_key(self, key: str) -> None:
        self.key_token = encrypt_secrets({"api_key": key})


class JudgeStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"


class JudgeJob(models.Model):
    """A rubric run over the rollouts of a search / filter; each "yes" proposes `label` on the rollout."""

    public_id = models.CharField(max_length=24, unique=True, default=new_public_id)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judge_jobs")
    rubric = models.TextField()
    label = models.ForeignKey(Label, on_delete=models.CASCADE, related_name="judge_jobs")
    query = models.JSONField(default=dict)  # the search's parameters (SearchSpec.params())
    limit = models.IntegerField(default=100)
    status = models.CharField(max_length=12, choices=JudgeStatus.choices, default=JudgeStatus.QUEUED)
    error = models.TextField(blank=True, default="")
    judged = models.IntegerField(default=0)
    yes = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    @property
    def active(self) -> bool:
        return self.status in (JudgeStatus.QUEUED, JudgeStatus.RUNNING, JudgeStatus.CANCELLING)


class Verdict(models.Model):
    """One rollout judged once per job: a resumed job skips rollouts that have one."""

    job = models.ForeignKey(JudgeJob, on_delete=models.CASCADE, related_name="verdicts")
    # No foreign key in Postgres: two statement-level triggers keep it (runs/references.py).
    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="verdicts", db_index=False,
                                db_constraint=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="verdicts")  # see labels.Mark.run
    answer = models.BooleanField(null=True)  # None: the judge's reply could not be read
    explanation = models.TextField(blank=True, default="")
    citations = ArrayField(models.IntegerField(), default=list, blank=True)  # turn indices
    input_tokens = models.IntegerField(default=0)
    output_tokens = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # The rollout first: its index is also the one the rollout's foreign key is checked through when a
        # run's rollouts are deleted (a check for each; without it, a scan of every verdict each time).
        # The job's own index serves a job's verdicts.
        constraints = [models.UniqueConstraint(fields=["rollout", "job"], name="verdict_rollout_job")]
