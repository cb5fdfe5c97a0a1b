"""Reads for the job pages (bounded: a page of jobs, the last events)."""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.models import Cluster, ClusterKind, Job, JobAttempt, JobEvent, JobTemplate
from deeprepo_web.jobs.services.workers import queues_live

JOBS_PAGE = 50
EVENTS_SHOWN = 200
ATTEMPTS_SHOWN = 20  # retries are capped at 10 per job (templates.MAX_NODE_RETRIES)


def launch_choices(*, project: Project, slug: str) -> tuple[JobTemplate, list[Cluster]]:
    """What a launch or sweep form of a template offers: the template (404 if not the project's or
    built in) and the project's clusters."""
    return template_get(project=project, slug=slug), list(Cluster.objects.filter(project=project))


def job_list(*, project: Project) -> QuerySet[Job]:
    return (Job.objects.filter(project=project).select_related("template", "cluster", "run")
            .order_by("-created_at", "-id"))


def job_get(*, project: Project, job_id: str) -> Job:
    job = Job.objects.select_related("template", "cluster", "run", "created_by").filter(
        project=project, public_id=job_id).first()
    if job is None:
        raise Http404("no such job")
    return job


def job_attempts(*, job: Job) -> list[JobAttempt]:
    """Every submission of the job (the first, then one per retry after a node failure); the
    page lists them when a retry policy is set or there was more than one."""
    return list(JobAttempt.objects.filter(job=job).order_by("number")[:ATTEMPTS_SHOWN])


def job_events(*, job: Job) -> list[JobEvent]:
    # The newest EVENTS_SHOWN, shown oldest first.
    return list(reversed(JobEvent.objects.filter(job=job).order_by("-at", "-id")[:EVENTS_SHOWN]))


def local_queues() -> list[str]:
    """The default queue, then the queues of every local cluster (any project): their jobs run on
    this machine, so the worker `make run` starts here must listen there too. Slurm and Ray
    clusters keep their own workers (docs/deploy.md): this one may not reach them."""
    default = str(settings.CELERY_TASK_DEFAULT_QUEUE)
    named = Cluster.objects.filter(kind=ClusterKind.LOCAL).exclude(queue="").exclude(queue=default)
    return [default, *sorted(set(named.values_list("queue", flat=True)))]


def clusters_with_workers(*, project: Project) -> list[Cluster]:
    """The project's clusters, each with `.workers`: hostnames of live workers on its queue."""
    live = queues_live()
    clusters = list(Cluster.objects.filter(project=project))
    for c in clusters:
        c.workers = sorted(live.get(c.task_queue, []))  # type: ignore[attr-defined]
    return clusters


def cluster_get(*, project: Project, cluster_id: int) -> Cluster:
    cluster = Cluster.objects.filter(project=project, pk=cluster_id).first()
    if cluster is None:
        raise Http404("no such cluster")
    return cluster


def template_get(*, project: Project, slug: str) -> JobTemplate:
    from django.db.models import Q

    template = JobTemplate.objects.filter(Q(project=project) | Q(project__isnull=True), slug=slug).order_by(
        "project_id").first()
    if template is None:
        raise Http404("no such template")
    return template
