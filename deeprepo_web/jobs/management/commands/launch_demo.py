from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from deeprepo_web.accounts.models import Project
from deeprepo_web.checkpoint_evals.services import rule_create
from deeprepo_web.jobs.models import Cluster, JobTemplate
from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.jobs.services.templates import builtin_templates_ensure

LOCAL_CLUSTER = "this machine"


class Command(BaseCommand):
    help = ("Launch the Demo GRPO template as a real job on the project's local cluster (created "
            "once: this machine, the repository as workdir). The Celery worker dispatches it. Its "
            "checkpoints are evaluated by themselves: a checkpoint-eval rule on its run launches the "
            "demo eval template for each checkpoint it logs.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default=settings.SITE_URL, help="how the job reaches this server")
        parser.add_argument("--project", default="demo")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--steps", type=int, default=40)
        parser.add_argument("--step-sleep", type=float, default=3.0,
                            help="seconds between steps: 40 x 3 s lets a newcomer watch the curves rise")
        parser.add_argument("--checkpoint-every", type=int, default=10,
                            help="a checkpoint (and its eval job) every N steps; 0 = none")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"no project {options['project']!r}; run bootstrap_demo first")
        user = User.objects.filter(username=options["username"]).first()
        url = options["url"].rstrip("/")
        cluster = Cluster.objects.filter(project=project, name=LOCAL_CLUSTER).first()
        wanted = {
            "state_dir": str(Path(settings.DATA_DIR) / "local-jobs"),
            "workdir": str(Path(settings.BASE_DIR)),
            "deeprepo_url": url,
        }
        if cluster is None or any(cluster.settings.get(k) != v for k, v in wanted.items()):
            cluster = cluster_save(project=project, cluster=cluster, name=LOCAL_CLUSTER, kind="local",
                                   settings_in={**(cluster.settings if cluster else {}), **wanted})
        builtin_templates_ensure()
        template = JobTemplate.objects.get(project__isnull=True, slug="demo-grpo")
        every = max(0, options["checkpoint_every"])
        job = job_launch(
            project=project, template=template, cluster=cluster, user=user, name="demo GRPO (make run)",
            # With checkpoints, their evals come from the rule below (not the trainer's own before/after).
            params={"steps": options["steps"], "step_sleep": options["step_sleep"], "checkpoint_every": every,
                    "no_evals": bool(every)},
        )
        run_id = job.run.public_id if job.run else "?"
        self.stdout.write(f"demo job:  {url}/p/{project.slug}/jobs/{job.public_id}/  "
                          f"(run {url}/p/{project.slug}/runs/{run_id}/)")
        if every and job.run is not None:
            rule_create(run=job.run, template=JobTemplate.objects.get(project__isnull=True, slug="demo-grpo-eval"),
                        cluster=cluster, path_param="checkpoint", step_param="step", user=user)
            self.stdout.write(f"its checkpoints (every {every} steps) are evaluated by themselves: "
                              f"{url}/p/{project.slug}/runs/{run_id}/checkpoints/")
