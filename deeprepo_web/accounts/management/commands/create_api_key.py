from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from deeprepo_web.accounts.models import Project
from deeprepo_web.accounts.services import api_key_create, project_create


class Command(BaseCommand):
    help = "Create an API key for a project; the key is printed as the last line."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--create", action="store_true", help="create the project if it does not exist")
        parser.add_argument("--name", default="cli", help="a label for the key")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["project"]
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            if not options["create"]:
                raise CommandError(f"no project {slug!r}; pass --create to make it")
            project = project_create(slug=slug)
            self.stderr.write(f"created project {slug}")
        _, secret = api_key_create(project=project, name=options["name"])
        self.stdout.write(secret)
