"""Reads for the job pages (bounded: a page of jobs, the last events)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.models import Cluster, Job, JobEvent, JobTemplate
from deeprepo_web.jobs.services.workers import queues_live

JOBS_PAGE = 50
EVENTS_SHOWN = 200


def job_list(*, project: Project) -> QuerySet[Job]:
    return (Job.objects.filter(project=project).select_related("template", "cluster", "run")
            .order_by("-created_at", "-id"))


def job_get(*, project: Project, job_id: str) -> Job:
    job = Job.objects.select_related("template", "cluster", "run", "created_by").filter(
        project=project, public_id=job_id).first()
    if job is None:
        raise Http404("no such job")
    return job


def job_events(*, job: Job) -> list[JobEvent]:
    # The newest EVENTS_SHOWN, shown oldest first.
    return list(reversed(JobEvent.objects.filter(job=job).order_by("-at", "-id")[:EVENTS_SHOWN]))


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
