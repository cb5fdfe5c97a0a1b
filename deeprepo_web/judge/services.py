"""Judge endpoints and jobs: save an endpoint, start, cancel and resume a job. Callers checked the
editor role (accounts.access); the work itself is runner.judge_job_run, in a Celery worker."""

from __future__ import annotations

import math
from typing import Any

from django.db import transaction

from deeprepo_web import outbound
from deeprepo_web.accounts.models import Project
from deeprepo_web.audit.models import Action
from deeprepo_web.audit.services import audit_record
from deeprepo_web.judge.models import JudgeEndpoint, JudgeJob, JudgeStatus
from deeprepo_web.labels.models import Label
from deeprepo_web.text import clean_text
from workers.queue import enqueue

MAX_ROLLOUTS = 10_000


class JudgeError(Exception):
    """One line for the user, naming the field."""


def endpoint_save(*, project: Project, base_url: str, model: str, api_key: str | None,
                  input_per_mtok: float = 0.0, output_per_mtok: float = 0.0) -> JudgeEndpoint:
    """`api_key` None keeps the stored key; "" removes it."""
    if not base_url.startswith(("http://", "https://")):
        raise JudgeError("base_url: give the endpoint's http(s) URL, like https://judge.example.org/v1")
    try:
        outbound.url_check(base_url)
    except outbound.OutboundRefused as exc:
        raise JudgeError(f"base_url: {exc}") from None
    if not model.strip():
        raise JudgeError("model: name the judge model")
    for name, value in (("input_per_mtok", input_per_mtok), ("output_per_mtok", output_per_mtok)):
        if not math.isfinite(value) or value < 0:
            raise JudgeError(f"{name}: a price is a number ≥ 0")
    endpoint, _ = JudgeEndpoint.objects.get_or_create(project=project, defaults={"base_url": base_url, "model": model})
    endpoint.base_url, endpoint.model = base_url[:500], model.strip()[:200]
    endpoint.input_per_mtok, endpoint.output_per_mtok = input_per_mtok, output_per_mtok
    if api_key is not None:
        endpoint.set_api_key(api_key)
    with transaction.atomic():
        endpoint.save()
        audit_record(project=project, action=Action.JUDGE_ENDPOINT_SAVED, target=endpoint.base_url,
                     model=endpoint.model, key_changed=api_key is not None)
    return endpoint


def _send(job: JudgeJob) -> None:
    def send() -> None:
        if not enqueue("deeprepo.judge.run", job.pk):
            JudgeJob.objects.filter(pk=job.pk).update(error="the task queue is away; press Resume to try again")

    transaction.on_commit(send)


def judge_start(*, project: Project, user: Any, rubric: str, label: Label, query: dict[str, str],
                limit: int = 100) -> JudgeJob:
    rubric = clean_text(rubric).strip()
    if not rubric:
        raise JudgeError("rubric: write what the judge should look for")
    if label.project_id != project.pk:
        raise JudgeError("label: not a label of this project")
    if not JudgeEndpoint.objects.filter(project=project).exists():
        raise JudgeError("endpoint: configure the project's judge endpoint first")
    if not 1 <= limit <= MAX_ROLLOUTS:
        raise JudgeError(f"limit: judge between 1 and {MAX_ROLLOUTS} rollouts")
    with transaction.atomic():
        job = JudgeJob.objects.create(project=project, rubric=rubric[:10_000], label=label, query=query,
                                      limit=limit, created_by=user)
        _send(job)
    return job


def judge_cancel(*, job: JudgeJob) -> None:
    # A queued job has no worker yet: it is cancelled now (its task, if it comes, finds it so).
    JudgeJob.objects.filter(pk=job.pk, status=JudgeStatus.QUEUED).update(status=JudgeStatus.CANCELLED)
    JudgeJob.objects.filter(pk=job.pk, status=JudgeStatus.RUNNING).update(status=JudgeStatus.CANCELLING)


def judge_resume(*, job: JudgeJob) -> bool:
    """Queue a cancelled or failed job again; rollouts it judged already are skipped, not paid twice."""
    with transaction.atomic():
        changed = JudgeJob.objects.filter(
            pk=job.pk, status__in=[JudgeStatus.CANCELLED, JudgeStatus.FAILED]).update(
            status=JudgeStatus.QUEUED, error="")
        if changed:
            _send(job)
    return bool(changed)
