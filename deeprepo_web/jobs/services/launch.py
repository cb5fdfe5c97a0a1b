"""Launch and cancel from the web: a Job and its Run, then dispatch or cancel once the transaction commits."""

from __future__ import annotations

import functools
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.models import Cluster, ClusterKind, Job, JobEvent, JobStatus, JobTemplate
from deeprepo_web.jobs.params import ParamError, render_command, validate_params, validate_schema
from deeprepo_web.jobs.services.errors import JobInputError, JobStateError
from deeprepo_web.jobs.services.state import finalize, job_event, job_event_row
from deeprepo_web.jobs.services.workers import queue_is_live, waiting_message
from deeprepo_web.runs.models import Run, new_public_id
from deeprepo_web.runs.services import run_name_free, runs_create_queued
from deeprepo_web.text import clean_deep, clean_text
from workers.backends import BackendError, Resources
from workers.queue import enqueue, enqueue_many

RESOURCE_FIELDS = ("partition", "nodes", "gpus", "cpus", "mem", "time_limit", "account", "ray_resources")


def resources_validate(raw: dict[str, Any]) -> dict[str, Any]:
    """Resources as stored on the job (JSON), after the backends' own validation."""
    out: dict[str, Any] = {}
    for key in RESOURCE_FIELDS:
        value = raw.get(key)
        if value is None or value == "" or value == {}:
            continue
        if key in ("gpus", "cpus", "nodes"):
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise JobInputError(key, f"must be an integer, got {str(value)[:40]!r}") from None
        elif key == "ray_resources":
            if not isinstance(value, dict):
                raise JobInputError(key, "must be an object name -> amount")
        else:
            value = str(value).strip()
        out[key] = value
    unknown = sorted(set(raw) - set(RESOURCE_FIELDS))
    if unknown:
        raise JobInputError(unknown[0], f"is not a resource ({', '.join(RESOURCE_FIELDS)})")
    try:
        Resources(**out)
    except BackendError as e:
        field = next((k for k in RESOURCE_FIELDS if e.message.startswith(k.replace("_", " ")) or
                      e.message.startswith(k)), "resources")
        raise JobInputError(field, e.message) from e
    return out


def _output_dir(cluster: Cluster, job: Job) -> str:
    root = str(cluster.settings.get("output_root") or "")
    if not root:
        root = str(Path(settings.DATA_DIR) / "job-outputs") if cluster.kind == ClusterKind.LOCAL \
            else ".deeprepo/outputs"
    return f"{root.rstrip('/')}/{job.public_id}"


def job_launch(
    *, project: Project, template: JobTemplate, cluster: Cluster, params: dict[str, Any],
    resources: dict[str, Any] | None = None, user: Any = None, name: str = "",
) -> Job:
    """One job: jobs_launch with one point, so a single launch and a sweep's make the same rows
    and events. A name too long is refused (a sweep's names are cut instead); none is the
    template's name and the time."""
    name = clean_text(name or "").strip() or f"{template.name} {timezone.now():%Y-%m-%d %H:%M}"
    if len(name) > 200:
        raise JobInputError("name", "must be at most 200 characters")
    job = jobs_launch(project=project, template=template, cluster=cluster, points=[(name, params)],
                      resources=resources, user=user)[0]
    if isinstance(job, JobInputError):
        raise job
    return job


def _run_fields(template: JobTemplate, cluster: Cluster, values: dict[str, Any]) -> dict[str, Any]:
    return {"kind": template.kind, "method": "grpo" if template.slug in ("demo-grpo", "trl-grpo", "prime-rl") else "",
            "config": {"job_template": template.slug, "parameters": values, "cluster": cluster.name}}


@transaction.atomic
def jobs_launch(
    *, project: Project, template: JobTemplate, cluster: Cluster, points: list[tuple[str, dict[str, Any]]],
    resources: dict[str, Any] | None = None, user: Any = None,
) -> list[Job | JobInputError]:
    """Jobs of one template on one cluster (one launch, or a sweep's chunk of trials), each point
    `(name, params)`, all with `resources`: the runs (queued), jobs and events in one INSERT each,
    the dispatch messages sent together once committed. A point the template refuses gets its
    JobInputError in its place; the others launch."""
    if template.project_id not in (None, project.id):
        raise JobInputError("template", "not a template of this project")
    if cluster.project_id != project.id:
        raise JobInputError("cluster", "not a cluster of this project")
    try:
        schema = validate_schema(template.params_schema)
    except ParamError as e:
        raise JobInputError(e.field, e.message) from e
    res = resources_validate(resources or {})
    names = _names_free(project, [clean_text(n or "").strip()[:200] or template.name for n, _ in points])
    out: list[Job | JobInputError] = []
    runs: list[dict[str, Any]] = []
    for name, (_, params) in zip(names, points, strict=True):
        try:
            # params.py refuses NUL in values; a lone surrogate passes it, and jsonb would refuse it.
            values = clean_deep(validate_params(schema, params))
            job = Job(project=project, template=template, cluster=cluster, created_by=user, name=name,
                      parameters=values, resources=res, command="", max_node_retries=template.max_node_retries)
            job.output_dir = _output_dir(cluster, job)
            run_id = new_public_id()
            job.command = render_command(template.command_template, schema, values, {
                "output_dir": job.output_dir, "job_id": job.public_id, "run_id": run_id})
        except ParamError as e:
            out.append(JobInputError(e.field, e.message))
            continue
        out.append(job)
        runs.append({"public_id": run_id, "name": name, **_run_fields(template, cluster, values)})
    jobs = [j for j in out if isinstance(j, Job)]
    if not jobs:
        return out
    for job, run in zip(jobs, runs_create_queued(project=project, source="job", runs=runs), strict=True):
        job.run = run
    waiting = "" if queue_is_live(cluster.task_queue) else waiting_message(cluster)
    for job in jobs:
        job.error = waiting
    Job.objects.bulk_create(jobs)
    who = getattr(user, "username", "") or "system"
    events = [job_event_row(j, "", JobStatus.PENDING, f"launched by {who} on {cluster.name} ({cluster.kind})")
              for j in jobs]
    if waiting:
        # The tasks wait in the queue until a worker starts there; say so rather than look stuck.
        events += [job_event_row(j, JobStatus.PENDING, JobStatus.PENDING, waiting) for j in jobs]
    JobEvent.objects.bulk_create(events)
    transaction.on_commit(functools.partial(_dispatch_many, [j.pk for j in jobs], cluster.task_queue))
    return out


def _names_free(project: Project, names: list[str]) -> list[str]:
    """Each name, or the first free `name (n)`: one query for the usual case where none is taken."""
    taken = set(Run.objects.filter(project=project, name__in=names).values_list("name", flat=True))
    out: list[str] = []
    for name in names:
        free = name if name not in taken else run_name_free(project=project, name=name)
        n = 2
        while free in out:  # twice in this batch
            free = run_name_free(project=project, name=f"{name[:190]} ({n})")
            n += 1
        out.append(free)
    return out


def _dispatch_many(job_ids: list[int], queue: str) -> None:
    """Send the dispatch of every job over one broker connection; the ones that did not go are
    noted on their job (beat's sync sends them again once stale)."""
    sent = enqueue_many("deeprepo.jobs.dispatch", [(pk,) for pk in job_ids], queue=queue)
    for pk in job_ids[sent:]:
        job_event(pk, JobStatus.PENDING, JobStatus.PENDING, _unreachable("dispatch"))


def stale_after() -> timedelta:
    return timedelta(seconds=float(settings.DEEPREPO_JOB_STALE_DISPATCH_SECONDS))


def job_queue(job_id: int) -> str:
    """The queue of the job's cluster: its tasks run on a worker beside that cluster."""
    queue = Job.objects.filter(pk=job_id).values_list("cluster__queue", flat=True).first()
    return queue or str(settings.CELERY_TASK_DEFAULT_QUEUE)


def job_enqueue(what: str, job_id: int, *, note: bool = True) -> bool:
    """Send the job's dispatch or cancel task. The broker may be away (Redis restarting): then the
    row is already committed, so say so on the job and let beat's sync send it again once
    the job is stale, instead of failing the user's request after the fact."""
    if enqueue(f"deeprepo.jobs.{what}", job_id, queue=job_queue(job_id)):
        return True
    if note:
        status = Job.objects.filter(pk=job_id).values_list("status", flat=True).first() or ""
        job_event(job_id, status, status, _unreachable(what))
    return False


def _unreachable(what: str) -> str:
    return (f"the task queue is unreachable; the {what} will be sent again within "
            f"{stale_after().total_seconds() + settings.DEEPREPO_JOB_SYNC_SECONDS:.0f}s of the queue coming back")


def job_cancel(*, job: Job, user: Any = None) -> Job:
    who = getattr(user, "username", "") or "system"
    now = timezone.now()
    with transaction.atomic():
        cancelled = Job.objects.filter(pk=job.pk, status=JobStatus.PENDING).update(
            status=JobStatus.CANCELLED, finished_at=now)
        if cancelled:
            # Never reached the cluster: dispatch will find it cancelled and do nothing.
            job_event(job, JobStatus.PENDING, JobStatus.CANCELLED, f"cancelled by {who} before it was submitted")
            finalize(job.pk)
    if not cancelled:
        for status in (JobStatus.SUBMITTING, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.REQUEUED):
            if Job.objects.filter(pk=job.pk, status=status).update(status=JobStatus.CANCELLING):
                job_event(job, status, JobStatus.CANCELLING, f"cancel requested by {who}")
                transaction.on_commit(functools.partial(job_enqueue, "cancel", job.pk))
                break
        else:
            job.refresh_from_db()
            raise JobStateError(f"job is {job.status}; nothing to cancel")
    job.refresh_from_db()
    return job
