"""judge_job_run: what the Celery task does. Judge each rollout of the job's search once, store the
verdict, propose the label on a "yes", and stop between rollouts when the job is cancelled."""

from __future__ import annotations

import time

from django.db import transaction
from django.db.models import F

from deeprepo_web.judge.client import JudgeCallFailed, Reply, chat
from deeprepo_web.judge.models import JudgeEndpoint, JudgeJob, JudgeStatus, Verdict
from deeprepo_web.judge.prompt import judge_messages
from deeprepo_web.labels.models import Mark, MarkStatus
from deeprepo_web.runs.models import Rollout
from deeprepo_web.search.selectors import search_rollout_ids, search_scope
from deeprepo_web.search.spec import spec_parse

ATTEMPTS = 3


def _job_ids(job: JudgeJob) -> list[int]:
    spec = spec_parse(job.query)
    scope = search_scope(project=job.project, spec=spec)
    # A bounded list first: the cursor's transaction must not hold back every verdict's commit.
    return list(search_rollout_ids(scope=scope, spec=spec, limit=job.limit))


def _call(endpoint: JudgeEndpoint, job: JudgeJob, rollout: Rollout) -> Reply:
    for attempt in range(ATTEMPTS):
        try:
            return chat(base_url=endpoint.base_url, api_key=endpoint.api_key(), model=endpoint.model,
                        messages=judge_messages(job.rubric, rollout))
        except JudgeCallFailed as exc:
            if exc.permanent or attempt == ATTEMPTS - 1:
                raise
            time.sleep(2 ** attempt)
    raise AssertionError("unreachable")


def _store(job: JudgeJob, endpoint: JudgeEndpoint, rollout: Rollout, reply: Reply) -> None:
    cost = (reply.input_tokens * endpoint.input_per_mtok + reply.output_tokens * endpoint.output_per_mtok) / 1e6
    with transaction.atomic():
        _, created = Verdict.objects.get_or_create(job=job, rollout=rollout, defaults={
            "run_id": rollout.run_id, "answer": reply.answer, "explanation": reply.explanation, "citations": reply.citations,
            "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens})
        if not created:
            return
        JudgeJob.objects.filter(pk=job.pk).update(
            judged=F("judged") + 1, yes=F("yes") + (1 if reply.answer else 0),
            failed=F("failed") + (1 if reply.answer is None else 0),
            input_tokens=F("input_tokens") + reply.input_tokens, output_tokens=F("output_tokens") + reply.output_tokens,
            cost=F("cost") + cost)
        if reply.answer:
            # A person confirms or rejects it; one a person already decided on stays as it is.
            Mark.objects.get_or_create(
                label=job.label, rollout=rollout, turn_index=None,
                defaults={"run_id": rollout.run_id, "status": MarkStatus.PROPOSED, "source": f"judge:{job.public_id}",
                          "note": (f"turns {', '.join(map(str, reply.citations))}: " if reply.citations else "")
                          + reply.explanation[:2000]})


def judge_job_run(*, job_id: int) -> str:
    if not JudgeJob.objects.filter(pk=job_id, status=JudgeStatus.QUEUED).update(status=JudgeStatus.RUNNING):
        return "skipped"  # cancelled before it started, or another worker has it
    job = JudgeJob.objects.select_related("project", "label").get(pk=job_id)
    endpoint = JudgeEndpoint.objects.filter(project=job.project).first()
    if endpoint is None:
        JudgeJob.objects.filter(pk=job.pk).update(status=JudgeStatus.FAILED, error="no judge endpoint configured")
        return "failed"
    done = set(Verdict.objects.filter(job=job).values_list("rollout_id", flat=True))
    for rollout_id in _job_ids(job):
        if rollout_id in done:
            continue
        if JudgeJob.objects.filter(pk=job.pk, status=JudgeStatus.CANCELLING).update(status=JudgeStatus.CANCELLED):
            return "cancelled"
        rollout = Rollout.objects.filter(pk=rollout_id).first()
        if rollout is None:
            continue
        try:
            reply = _call(endpoint, job, rollout)
        except JudgeCallFailed as exc:
            JudgeJob.objects.filter(pk=job.pk).update(status=JudgeStatus.FAILED, error=str(exc)[:2000])
            return "failed"
        _store(job, endpoint, rollout, reply)
    if JudgeJob.objects.filter(pk=job.pk, status=JudgeStatus.CANCELLING).update(status=JudgeStatus.CANCELLED):
        return "cancelled"
    JudgeJob.objects.filter(pk=job.pk, status=JudgeStatus.RUNNING).update(status=JudgeStatus.DONE)
    return "done"
