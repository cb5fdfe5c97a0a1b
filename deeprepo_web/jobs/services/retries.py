"""Attempts and the retry policy on node failure (a template's "max retries on node failure").

What counts as a node failure (the node or the cluster ended the job, not the program):
- Slurm NODE_FAIL, BOOT_FAIL, and PREEMPTED when Slurm did not requeue the job (a requeued job
  stays one attempt: the cluster reruns the same id, see sync's REQUEUED);
- a Ray job whose supervisor actor died with its node (error type JOB_SUPERVISOR_ACTOR_DIED);
- a lost job: the cluster forgot it and no exit code exists (a local process killed outside its
  wrapper or a machine restart; a Ray head restarted; Slurm without any record).
Not retried: an exit code other than 0 (FAILED), TIMEOUT, DEADLINE, OUT_OF_MEMORY (the job's own
limits: a second attempt would end the same way), a cancel.

A retry submits the job again as a new attempt into the same Job and Run: the program gets the
same DEEPREPO_RUN_ID (and DEEPREPO_JOB_ATTEMPT), so its client resumes the run, W&B-style.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce

from deeprepo_web.jobs.models import FINAL_JOB_STATUSES, Job, JobAttempt, JobStatus
from deeprepo_web.jobs.services.launch import job_enqueue
from deeprepo_web.jobs.services.state import job_event
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, Run, RunStatus
from workers.backends import JobState
from workers.backends import JobStatus as ClusterStatus


def is_node_failure(status: ClusterStatus) -> bool:
    return status.node_failure or status.state is JobState.LOST


def attempt_key(job: Job) -> str:
    """The id the cluster knows this attempt by: the job's public id, then `-r<n>` per retry, so
    looking for an interrupted submit (`Backend.find`) never adopts an earlier, failed attempt."""
    return job.public_id if not job.node_retries else f"{job.public_id}-r{job.node_retries}"


def attempt_open(*, job: Job, external_id: str, at: datetime) -> None:
    """The current attempt reached the cluster as `external_id` (submitted or adopted)."""
    JobAttempt.objects.update_or_create(job_id=job.pk, number=job.node_retries + 1,
                                        defaults={"external_id": external_id, "submitted_at": at})


def attempt_mark(*, job: Job, state: str, reason: str, at: datetime) -> None:
    """Mirror a transition of the job onto its current attempt."""
    fields: dict[str, Any] = {"state": state, "reason": reason[:2000]}
    if state == JobStatus.RUNNING:
        # Running again after a requeue keeps when the attempt first started.
        fields["started_at"] = Coalesce(F("started_at"), at)
    if state in FINAL_JOB_STATUSES:
        fields["finished_at"] = at
    JobAttempt.objects.filter(job_id=job.pk, number=job.node_retries + 1).update(**fields)


def retry_due(job: Job, status: ClusterStatus) -> bool:
    return job.status != JobStatus.CANCELLING and is_node_failure(status) and job.node_retries < job.max_node_retries


def job_resubmit(*, job: Job, status: ClusterStatus, ended: str, at: datetime) -> bool:
    """The current attempt died with its node and retries remain: end the attempt as `ended` (the
    job state sync mapped the cluster's to: failed or lost), put the job back to pending (a fresh
    cluster id, the same run) and dispatch it again once committed."""
    old = job.status
    number = job.node_retries + 1
    reason = status.reason or str(status.state)
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=old).update(
                status=JobStatus.PENDING, external_id="", node_retries=F("node_retries") + 1, attempts=0,
                requeues=0, submitted_at=None, exit_code=None, error="", synced_at=at):
            return False
        attempt_mark(job=job, state=ended, reason=reason, at=at)
        job_event(job, old, JobStatus.PENDING,
                  f"attempt {number} ended by a node failure on {job.cluster.name} ({reason}); submitting "
                  f"attempt {number + 1} (retry {number} of {job.max_node_retries}) into the same run")
        if job.run_id:
            # The program may have closed its run as it was killed: the next attempt resumes it.
            Run.objects.filter(pk=job.run_id, status__in=FINAL_RUN_STATUSES).update(
                status=RunStatus.RUNNING, finished_at=None)
        transaction.on_commit(functools.partial(job_enqueue, "dispatch", job.pk))
    return True


def retries_exhausted_note(job: Job, status: ClusterStatus) -> str:
    """What a final node failure adds to its reason when a retry policy was set."""
    if job.max_node_retries and is_node_failure(status):
        return f"; no retry left ({job.node_retries} of {job.max_node_retries} used)"
    return ""
